package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
)

// attempts counts the failed attempts of the step Drive runs.
type attempts struct {
	step    string
	failed  int       // its attempts that failed
	first   time.Time // when its first attempt started
	last    time.Time // when its last attempt failed
	lastErr string    // that attempt's error, in plain words (Retry.Text)
}

// begin counts from the start when step is not the step whose attempts
// failed last.
func (a *attempts) begin(step string, now time.Time) {
	if a.step != step {
		*a = attempts{step: step, first: now}
	}
}

// retry handles the failure err of a model or read step's attempt: it
// tells OnRetry and waits (returning nil) when Retry allows another
// attempt, and otherwise records why the run stops (run.stopped) and
// returns a *StoppedError. A cancel recorded while it waits ends the wait
// (the next load says Cancelled); ctx ending ends it with ctx's error.
func (j *Engine) retry(ctx context.Context, runID string, seen int, step agent.Step, tries *attempts, err error, changes <-chan struct{}) error {
	tries.failed++
	tries.last, tries.lastErr = j.now(), j.Retry.Text(err)
	wait, again := j.Retry.Next(step, tries.failed, err)
	if !again {
		stop := journal.Stop{Step: step.Name, Attempts: tries.failed, Over: j.now().Sub(tries.first), Error: j.Retry.Text(err)}
		*tries = attempts{}
		stopped := &StoppedError{RunID: runID, Stop: stop, Err: err}
		if rerr := j.update(ctx, runID, "stop", func(*state) ([]journal.Record, bool, error) {
			return []journal.Record{{Type: journal.RunStopped, Stopped: &stop, At: j.now()}}, false, nil
		}); rerr != nil {
			return fmt.Errorf("%w (recording why failed: %v)", stopped, rerr)
		}
		return stopped
	}
	if j.OnRetry != nil {
		j.OnRetry(Retrying{RunID: runID, Step: step.Name, Attempt: tries.failed, Attempts: j.Retry.Attempts(), Error: j.Retry.Text(err), Wait: wait})
	}
	wctx, stop := j.watchCancel(ctx, runID, seen, changes)
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-wctx.Done():
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// errEnded is interrupted's way out of update for a run that ended.
var errEnded = errors.New("the run ended")

// interruptBound bounds recording why an interrupted driver stopped.
const interruptBound = 5 * time.Second

// interrupted records, when Drive's context ended while it retried a failing
// step, that the run stopped there and why (run.stopped, Interrupted: the
// step, its failed attempts, the last error), so that show names them and
// says how to resume rather than "Running" with nothing behind it. It is
// best effort: a driver that is killed records nothing, and show then says
// only that no driver runs the run.
func (j *Engine) interrupted(ctx context.Context, runID string, tries *attempts) {
	if tries.failed == 0 || tries.step == "" {
		return
	}
	stop := journal.Stop{Step: tries.step, Attempts: tries.failed, Over: tries.last.Sub(tries.first), Error: tries.lastErr, Interrupted: true}
	*tries = attempts{}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptBound)
	defer cancel()
	_ = j.update(ctx, runID, "stop", func(st *state) ([]journal.Record, bool, error) {
		if st.completed || st.cancelled {
			return nil, false, errEnded // nothing to say: it ended
		}
		return []journal.Record{{Type: journal.RunStopped, Stopped: &stop, At: j.now()}}, false, nil
	})
}
