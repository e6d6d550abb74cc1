package local

import (
	"context"
	"errors"
	"time"

	"github.com/agentrun/agentrun/journal"
)

// errCancelled is the cause of a step context cancelled by a run.cancelled
// record.
var errCancelled = errors.New("the run was cancelled")

// cancelled reports whether the run's journal holds a run.cancelled
// record; false when it cannot be read.
func (j *Engine) cancelled(runID string) bool {
	recs, err := j.Store.Load(runID)
	return err == nil && fold(recs).cancelled
}

// cancelPoll is how often a running step looks for a cancel when its
// driver does not follow the run (a following driver is woken by its
// journal.Watch).
const cancelPoll = 250 * time.Millisecond

// watchCancel returns ctx, cancelled with errCancelled as soon as the run's
// journal (which held seen records) gets a run.cancelled record, and a
// function that stops watching and returns once it stopped. It looks at
// the journal when changes wakes it, or every cancelPoll when changes is
// nil.
func (j *Engine) watchCancel(ctx context.Context, runID string, seen int, changes <-chan struct{}) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var tick <-chan time.Time
		if changes == nil {
			t := time.NewTicker(cancelPoll)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-changes:
			case <-tick:
			}
			recs, err := j.Store.Load(runID)
			if err != nil {
				continue // the step's own store calls report it
			}
			for _, r := range recs[min(seen, len(recs)):] {
				if r.Type == journal.RunCancelled {
					cancel(errCancelled)
					return
				}
			}
		}
	}()
	// Stopping waits for the goroutine, so that it takes no more values
	// from changes (the follower's journal.Watch) once the driver reads them again.
	return ctx, func() { close(done); <-exited; cancel(nil) }
}
