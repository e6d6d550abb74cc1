package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// Drive starts the run runID with input, or resumes it when its journal
// already holds the same input, and drives the agent loop until the run
// completes or needs a person. Every step goes through the guard, so a
// resumed run calls no model and no tool twice for one step. A Failed
// outcome is returned as an outcome, not an error; an error means the run
// could not go on (a store failure, a step that failed) and may be resumed.
// With a Retry policy, a model or read step that fails is tried again
// while the policy allows (OnRetry is told of each retry before the wait);
// when it does not, Drive records why the run stops (run.stopped: the step,
// its attempts, how long they took, the last error) and returns a
// *StoppedError. A resumed run starts the step's attempts afresh.
// While it drives the run it holds the run's lock when the journal.Store is a
// Locker: a run another process drives is a *journal.BusyError, and nothing is
// written. Before every step it checks that it still holds the lock; a
// lost lock is a *journal.LockLostError, and the step does not run.
func (j *Engine) Drive(ctx context.Context, runID string, input []agent.Message, exec agent.Executor) (agent.Outcome, error) {
	j, err := j.driving(runID, input, exec)
	if err != nil {
		return agent.Outcome{}, err
	}
	if err := j.begin(runID, input); err != nil {
		return agent.Outcome{}, err
	}
	// One driver at a time (journal.Locker), taken once the input is known good so
	// that a refused prompt touches nothing; begin writes only run.started,
	// which two drivers of a new run agree on.
	lock, err := j.lockRun(ctx, runID)
	if err != nil {
		return agent.Outcome{}, err
	}
	defer lock.Release()
	r := &driver{j: j, runID: runID, exec: exec, lock: lock}
	if j.Follow {
		if m, ok := lock.(journal.FollowMarker); ok {
			m.MarkFollowing() // best effort: it is only for people and for message --wait
		}
		r.f = &follower{j: j, runID: runID, watch: j.Watch(ctx, runID)}
		defer r.f.watch.Close()
	}
	for state := driveState(r.deciding); state != nil; {
		state = state(ctx)
	}
	return r.out, r.err
}

// driving checks Drive's arguments and returns the engine that drives
// runID: j with the agents of exec. A run of another agent, or a child
// run, is driven through its own engine or its caller, not here.
func (j *Engine) driving(runID string, input []agent.Message, exec agent.Executor) (*Engine, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	if len(input) == 0 {
		return nil, fmt.Errorf("%w input: the prompt is empty; want at least one message", operator.ErrInvalid)
	}
	j = j.withAgents(exec)
	if e, err := j.of(runID); err != nil || e != j {
		switch {
		case err == nil && e.parentID == "":
			err = fmt.Errorf("%w run %s: it runs agent %q; drive it with that agent's engine", operator.ErrInvalid, runID, e.Agent)
		case err == nil:
			err = fmt.Errorf("%w run %s: it is the child run of agent %s of run %s; drive that run, which drives it", operator.ErrInvalid, runID, e.Agent, e.parentID)
		}
		return nil, err
	}
	return j, nil
}

// begin records the input of a new run, or checks it against the journal
// of an existing one.
func (j *Engine) begin(runID string, input []agent.Message) error {
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			st := fold(recs)
			if !st.started {
				return fmt.Errorf("run %s: the journal does not start with %s: %w", runID, journal.RunStarted, journal.ErrCorrupt)
			}
			if !sameInput(st.input, input) {
				return fmt.Errorf("run %s: %w; resume it with the prompt it started with, or choose another run id", runID, operator.ErrInputMismatch)
			}
			return nil
		}
		limits := j.Limits.WithDefaults()
		err = j.Store.Append(runID, 0, journal.Record{Type: journal.RunStarted, Input: input, Budget: &limits, Session: j.Session, Agent: j.Agent, Parent: j.parentID})
		if errors.Is(err, journal.ErrConflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("start %s: %w %d times", runID, journal.ErrConflict, maxConflicts)
}

// sameInput reports whether two inputs are the same messages.
func sameInput(a, b []agent.Message) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// lockRun takes the driver lock of runID when the store is a Locker; a
// store that is not has a lock that is always held (one process, or
// MemStore in tests).
func (j *Engine) lockRun(ctx context.Context, runID string) (journal.Lock, error) {
	if l, ok := j.Store.(journal.Locker); ok {
		return l.LockRun(ctx, runID)
	}
	return noLock{}, nil
}

// noLock is the lock of a store that is not a Locker.
type noLock struct{}

func (noLock) Held(context.Context) error { return nil }
func (noLock) Release()                   {}
