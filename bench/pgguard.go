package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
)

// guardParams sizes the guard journal section.
type guardParams struct {
	// Steps is how many write steps, and how many single appends, each
	// store takes its median over.
	Steps int
}

// pgOpenTimeout bounds connecting to the private cluster and creating the
// schema.
const pgOpenTimeout = time.Minute

// guardLatency compares the write guard's journal on PostgreSQL (a private
// cluster on this machine, started like the tests' through pgtest, fsync
// on) with a FileStore in the bench's folder: RunStep of a write step
// (step.started, then step.completed: two appends) and a plain Append of
// one record, interleaved, medians. It has no goal: it shows the price of a
// shared store.
func guardLatency(ctx context.Context, env *benchEnv, p guardParams) ([]row, error) {
	began := time.Now()
	sec := fmt.Sprintf("Guard journal on PostgreSQL: postgres.DB.Guard() on a private PostgreSQL cluster on this machine (fsync on, over 127.0.0.1) vs journal.FileStore in the bench's folder, %d of each interleaved", p.Steps)
	stepFig := "ms per write step (RunStep: step.started + step.completed), PostgreSQL vs FileStore"
	appendFig := "ms per Append of one step.completed record, PostgreSQL vs FileStore"
	fenceFig := "ms per fenced write step (RunAttempt: the attempt's start, the fence check right before the tool, the result) vs an unfenced one (RunStep) on the same run, interleaved, PostgreSQL"
	callsFig := "store calls per fenced write step vs per unfenced one (goal: at most one more; reads and model steps make none)"
	url, stop, err := pgtest.Start()
	if err != nil {
		why := "PostgreSQL did not start: " + err.Error()
		return []row{{Section: sec, Figure: stepFig, Missing: why}, {Section: sec, Figure: appendFig, Missing: why},
			{Section: sec, Figure: fenceFig, Missing: why}, {Section: sec, Figure: callsFig, Missing: why}}, nil
	}
	defer stop()
	octx, cancel := context.WithTimeout(ctx, pgOpenTimeout)
	db, err := postgres.Open(octx, url)
	cancel()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	file, err := journal.NewFileStore(env.subdir("guard-file"))
	if err != nil {
		return nil, err
	}
	stores := []journal.Store{file, db.Guard()}
	started := journal.Record{Type: journal.RunStarted, Input: []agent.Message{{Role: agent.RoleUser, Content: "bench"}}}
	const stepRun, appendRun = "run-steps", "run-appends"
	if err := db.Guard().Append(stepRun+"-fenced", 0, started); err != nil {
		return nil, err
	}
	for _, s := range stores {
		for _, id := range []string{stepRun, appendRun} {
			if err := s.Append(id, 0, started); err != nil {
				return nil, err
			}
		}
	}
	rec := appendRecord()
	stepTimes := make([][]time.Duration, len(stores))
	appendTimes := make([][]time.Duration, len(stores))
	var fencedTimes, plainTimes []time.Duration
	pg := &countingStore{Store: db.Guard()}
	var plainCalls, fencedCalls int
	for i := range p.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for k, s := range stores {
			j := &journal.Guard{Store: s}
			step := agent.Step{Name: fmt.Sprintf("tool/%d/0/create_ticket", i), Kind: agent.KindWrite}
			start := time.Now()
			if _, err := j.RunStep(ctx, stepRun, step, func(context.Context) (json.RawMessage, error) { return rec.Result, nil }); err != nil {
				return nil, fmt.Errorf("write step %d: %w", i, err)
			}
			stepTimes[k] = append(stepTimes[k], time.Since(start))
			start = time.Now()
			if err := s.Append(appendRun, 1+i, rec); err != nil {
				return nil, fmt.Errorf("append %d: %w", i, err)
			}
			appendTimes[k] = append(appendTimes[k], time.Since(start))
		}
		// The same write fenced, on PostgreSQL, and the store calls of both.
		j := &journal.Guard{Store: pg}
		step := agent.Step{Name: fmt.Sprintf("tool/%d/0/create_ticket", i), Kind: agent.KindWrite}
		before := pg.calls
		start := time.Now()
		if _, err := j.RunAttempt(ctx, stepRun+"-fenced", step, fence.Attempt{Number: 1}.Here(), time.Minute,
			func(context.Context) (json.RawMessage, error) { return rec.Result, nil }); err != nil {
			return nil, fmt.Errorf("fenced write step %d: %w", i, err)
		}
		fencedTimes = append(fencedTimes, time.Since(start))
		fencedCalls = pg.calls - before
		before = pg.calls
		step.Name += "-plain"
		start = time.Now()
		if _, err := j.RunStep(ctx, stepRun+"-fenced", step, func(context.Context) (json.RawMessage, error) { return rec.Result, nil }); err != nil {
			return nil, fmt.Errorf("write step %d: %w", i, err)
		}
		plainCalls = pg.calls - before
		plainTimes = append(plainTimes, time.Since(start))
	}
	sec += fmt.Sprintf(" (the section took %s, starting the cluster included)", time.Since(began).Round(time.Second))
	return []row{
		{Section: sec, Figure: stepFig, Measured: ms(median(stepTimes[1])), Baseline: ms(median(stepTimes[0])), Unit: "ms"},
		{Section: sec, Figure: appendFig, Measured: ms(median(appendTimes[1])), Baseline: ms(median(appendTimes[0])), Unit: "ms"},
		{Section: sec, Figure: fenceFig, Measured: ms(median(fencedTimes)), Baseline: ms(median(plainTimes)), Unit: "ms"},
		{Section: sec, Figure: callsFig, Measured: float64(fencedCalls), Baseline: float64(plainCalls), Goal: float64(plainCalls+1) / float64(max(plainCalls, 1))},
	}, nil
}

// countingStore counts the calls made to a store: each Load and Append is
// one round trip (one statement on PostgreSQL).
type countingStore struct {
	journal.Store
	calls int
}

func (c *countingStore) Load(runID string) ([]journal.Record, error) {
	c.calls++
	return c.Store.Load(runID)
}

func (c *countingStore) Append(runID string, seen int, recs ...journal.Record) error {
	c.calls++
	return c.Store.Append(runID, seen, recs...)
}
