package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
)

// journalParams sizes the local journal section.
type journalParams struct {
	// Appends is how many appends each figure takes its median over.
	Appends int
	// Small and Large are the records a run holds before its appends.
	Small, Large int
	// Steps is how many steps of each kind the fsync count averages over.
	Steps int
}

// appendRecord is a typical step.completed record: a tool result of about
// 200 bytes.
func appendRecord() journal.Record {
	content := strings.Repeat("policy 42: granted; ", 10) // 200 bytes
	return journal.Record{Type: journal.StepCompleted, Step: "tool/3/0/lookup", Result: agent.EncodeToolResult(agent.ToolResult{Content: content})}
}

func localJournal(ctx context.Context, env *benchEnv, p journalParams) ([]row, error) {
	dir := env.subdir("journal")
	store, err := journal.NewFileStore(dir)
	if err != nil {
		return nil, err
	}
	rec := appendRecord()
	fill := func(runID string, n int) error {
		recs := make([]journal.Record, n)
		for i := range recs {
			recs[i] = rec
		}
		return store.Append(runID, 0, recs...)
	}
	const small, large = "run-small", "run-large"
	if err := fill(small, p.Small); err != nil {
		return nil, err
	}
	if err := fill(large, p.Large); err != nil {
		return nil, err
	}
	// The bytes one append writes: the store's own last line.
	data, err := os.ReadFile(filepath.Join(dir, small+".jsonl"))
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	line := append(bytes.TrimSuffix(lines[len(lines)-1], []byte("\n")), '\n')

	raw, err := os.OpenFile(filepath.Join(dir, "raw-baseline.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	rawAppend := func() error {
		if _, err := raw.Write(line); err != nil {
			return err
		}
		return raw.Sync()
	}

	var rawTimes, smallTimes, largeTimes []time.Duration
	before, _ := statsOf(store)
	for i := range p.Appends {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, m := range []struct {
			times *[]time.Duration
			do    func() error
		}{
			{&rawTimes, rawAppend},
			{&smallTimes, func() error { return store.Append(small, p.Small+i, rec) }},
			{&rawTimes, rawAppend},
			{&largeTimes, func() error { return store.Append(large, p.Large+i, rec) }},
		} {
			start := time.Now()
			if err := m.do(); err != nil {
				return nil, fmt.Errorf("append %d: %w", i, err)
			}
			*m.times = append(*m.times, time.Since(start))
		}
	}
	after, haveStats := statsOf(store)

	sec := fmt.Sprintf("Local journal: FileStore.Append of one %d-byte step.completed line vs write+fsync of the same bytes to an O_APPEND file in the same folder, %d appends each, interleaved", len(line), p.Appends)
	rows := []row{
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %d records vs raw write+fsync", p.Small), Measured: ms(median(smallTimes)), Baseline: ms(median(rawTimes)), Unit: "ms", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %s records vs raw write+fsync", thousands(p.Large)), Measured: ms(median(largeTimes)), Baseline: ms(median(rawTimes)), Unit: "ms", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %s records vs run of %d", thousands(p.Large), p.Small), Measured: ms(median(largeTimes)), Baseline: ms(median(smallTimes)), Unit: "ms", Goal: 1.2, GoalNote: "flat"},
	}
	const noStats = "journal.FileStore has no Stats() yet"
	readRow := row{Section: sec, Figure: fmt.Sprintf("bytes read per append, run of %s records vs appended bytes", thousands(p.Large)), Unit: "B", Goal: 1.0, GoalNote: "O(1): at most a line", Missing: noStats}
	if haveStats {
		// Both runs' appends are in the window; the small run's reads are
		// the smaller share, so this overstates the large run's a little.
		readRow.Missing = ""
		readRow.Measured = float64(after.BytesRead-before.BytesRead) / float64(2*p.Appends)
		readRow.Baseline = float64(len(line))
	}
	rows = append(rows, readRow)

	kindRows, err := fsyncsPerStep(ctx, store, p.Steps, sec)
	if err != nil {
		return nil, err
	}
	return append(rows, kindRows...), nil
}

// fsyncsPerStep runs steps of each kind through RunStep on a fresh run and
// counts the store's fsyncs per step, against the records each step
// appends (one fsync per record appended is the floor).
func fsyncsPerStep(ctx context.Context, store *journal.FileStore, steps int, sec string) ([]row, error) {
	j := &journal.Journal{Store: store}
	const runID = "run-kinds"
	if err := store.Append(runID, 0, journal.Record{Type: journal.RunStarted, Input: []agent.Message{{Role: agent.RoleUser, Content: "bench"}}}); err != nil {
		return nil, err
	}
	result := appendRecord().Result
	var rows []row
	for _, kind := range []agent.Kind{agent.KindModel, agent.KindRead, agent.KindWrite} {
		recsBefore, err := store.Load(runID)
		if err != nil {
			return nil, err
		}
		before, _ := statsOf(store)
		for i := range steps {
			step := agent.Step{Name: fmt.Sprintf("%s/%d", kind, i), Kind: kind}
			if _, err := j.RunStep(ctx, runID, step, func(context.Context) (json.RawMessage, error) { return result, nil }); err != nil {
				return nil, fmt.Errorf("%s step %d: %w", kind, i, err)
			}
		}
		after, haveStats := statsOf(store)
		recsAfter, err := store.Load(runID)
		if err != nil {
			return nil, err
		}
		r := row{Section: sec, Figure: fmt.Sprintf("fsyncs per %s step (RunStep) vs records it appends", kind), Goal: 1.0,
			Baseline: float64(len(recsAfter)-len(recsBefore)) / float64(steps)}
		if haveStats {
			r.Measured = float64(after.Fsyncs-before.Fsyncs) / float64(steps)
		} else {
			r.Missing = "journal.FileStore has no Stats() yet"
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// fileStats are the store's I/O counters: the fields of journal.FileStats.
type fileStats struct{ Appends, Fsyncs, BytesRead int64 }

// statsOf returns a store's I/O counters, or false when it keeps none.
//
// TODO(journal.FileStats): the O(1)-append change adds
// `func (s *journal.FileStore) Stats() journal.FileStats` with Appends,
// Fsyncs and BytesRead. Until it is merged, this finds the method by
// reflection, so that the bench builds and runs on both sides of the merge
// (the fsync rows say "not measured yet" before it). Once merged, replace
// the body with a direct call:
//
//	st := s.Stats()
//	return fileStats{Appends: st.Appends, Fsyncs: st.Fsyncs, BytesRead: st.BytesRead}, true
func statsOf(s *journal.FileStore) (fileStats, bool) {
	m := reflect.ValueOf(s).MethodByName("Stats")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.Struct {
		return fileStats{}, false
	}
	v := m.Call(nil)[0]
	var st fileStats
	for name, dst := range map[string]*int64{"Appends": &st.Appends, "Fsyncs": &st.Fsyncs, "BytesRead": &st.BytesRead} {
		f := v.FieldByName(name)
		if !f.IsValid() || !f.CanInt() {
			return fileStats{}, false
		}
		*dst = f.Int()
	}
	return st, true
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
