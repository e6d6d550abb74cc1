package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
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
	// The same appends sealed under a payload key, in the same folder.
	cdc, err := codec.New([]codec.Key{{ID: "bench", Bytes: bytes.Repeat([]byte{0x42}, codec.KeySize)}})
	if err != nil {
		return nil, err
	}
	sealedStore, err := journal.NewSealedFileStore(dir, cdc)
	if err != nil {
		return nil, err
	}
	rec := appendRecord()
	fill := func(store *journal.FileStore, runID string, n int) error {
		recs := make([]journal.Record, n)
		for i := range recs {
			recs[i] = rec
		}
		return store.Append(runID, 0, recs...)
	}
	const small, large, sealed = "run-small", "run-large", "run-sealed"
	if err := fill(store, small, p.Small); err != nil {
		return nil, err
	}
	if err := fill(store, large, p.Large); err != nil {
		return nil, err
	}
	if err := fill(sealedStore, sealed, p.Small); err != nil {
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

	var rawTimes, smallTimes, largeTimes, sealedTimes []time.Duration
	before := store.Stats()
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
			{&sealedTimes, func() error { return sealedStore.Append(sealed, p.Small+i, rec) }},
		} {
			start := time.Now()
			if err := m.do(); err != nil {
				return nil, fmt.Errorf("append %d: %w", i, err)
			}
			*m.times = append(*m.times, time.Since(start))
		}
	}
	after := store.Stats()

	sec := fmt.Sprintf("Local journal: FileStore.Append of one %d-byte step.completed line vs write+fsync of the same bytes to an O_APPEND file in the same folder, %d appends each, interleaved", len(line), p.Appends)
	rows := []row{
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %d records vs raw write+fsync", p.Small), Measured: ms(median(smallTimes)), Baseline: ms(median(rawTimes)), Unit: "ms", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %s records vs raw write+fsync", thousands(p.Large)), Measured: ms(median(largeTimes)), Baseline: ms(median(rawTimes)), Unit: "ms", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("ms per append, run of %s records vs run of %d", thousands(p.Large), p.Small), Measured: ms(median(largeTimes)), Baseline: ms(median(smallTimes)), Unit: "ms", Goal: 1.2, GoalNote: "flat"},
		{Section: sec, Figure: fmt.Sprintf("ms per append, sealed (a payload key set) vs plain, run of %d records", p.Small), Measured: ms(median(sealedTimes)), Baseline: ms(median(smallTimes)), Unit: "ms", Goal: 1.3},
	}
	// Both runs' appends are in the window; the small run's reads are the
	// smaller share, so this overstates the large run's a little.
	rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("bytes read per append, run of %s records vs appended bytes", thousands(p.Large)), Unit: "B", Goal: 1.0, GoalNote: "O(1): at most a line",
		Measured: float64(after.BytesRead-before.BytesRead) / float64(2*p.Appends), Baseline: float64(len(line))})

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
	j := &journal.Guard{Store: store}
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
		before := store.Stats()
		for i := range steps {
			step := agent.Step{Name: fmt.Sprintf("%s/%d", kind, i), Kind: kind}
			if _, err := j.RunStep(ctx, runID, step, func(context.Context) (json.RawMessage, error) { return result, nil }); err != nil {
				return nil, fmt.Errorf("%s step %d: %w", kind, i, err)
			}
		}
		after := store.Stats()
		recsAfter, err := store.Load(runID)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("fsyncs per %s step (RunStep) vs records it appends", kind), Goal: 1.0,
			Measured: float64(after.Fsyncs-before.Fsyncs) / float64(steps), Baseline: float64(len(recsAfter)-len(recsBefore)) / float64(steps)})
	}
	return rows, nil
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
