package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/ratelimit"
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
	if err := operator.ValidRunID(runID); err != nil {
		return agent.Outcome{}, err
	}
	if len(input) == 0 {
		return agent.Outcome{}, fmt.Errorf("%w input: the prompt is empty; want at least one message", operator.ErrInvalid)
	}
	j = j.withAgents(exec)
	if e, err := j.of(runID); err != nil || e != j {
		switch {
		case err == nil && e.parentID == "":
			err = fmt.Errorf("%w run %s: it runs agent %q; drive it with that agent's engine", operator.ErrInvalid, runID, e.Agent)
		case err == nil:
			err = fmt.Errorf("%w run %s: it is the child run of agent %s of run %s; drive that run, which drives it", operator.ErrInvalid, runID, e.Agent, e.parentID)
		}
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
	var f *follower // the wait between steps, when Run follows the run
	if j.Follow {
		if m, ok := lock.(journal.FollowMarker); ok {
			m.MarkFollowing() // best effort: it is only for people and for message --wait
		}
		f = &follower{j: j, runID: runID, watch: j.Watch(ctx, runID)}
		defer f.watch.Close()
	}
	var tries attempts // of the step that failed last, when Retry is set
	for {
		if err := ctx.Err(); err != nil {
			j.interrupted(ctx, runID, &tries)
			return j.stopped(runID, f, err)
		}
		recs, st, err := j.load(runID)
		if err != nil {
			return agent.Outcome{}, err
		}
		if st.completed {
			o := j.final(st)
			return agent.Outcome{Status: agent.StatusCompleted, Answer: st.answer, CutOff: o.CutOff, Empty: o.Empty}, nil
		}
		if st.cancelled {
			return st.cancelledOutcome(), nil
		}
		d := j.decide(st)
		if denials := st.expired(d.Outcome, j.now()); len(denials) > 0 {
			// Nobody decided in time: the calls are denied and the model
			// is told.
			err := j.Store.Append(runID, len(recs), signalRecords(denials)...)
			if err != nil && !errors.Is(err, journal.ErrConflict) {
				return agent.Outcome{}, err
			}
			continue
		}
		if d.Outcome != nil {
			if d.Outcome.Status == agent.StatusCompleted {
				err := j.Store.Append(runID, len(recs), journal.Record{Type: journal.RunCompleted, Answer: d.Outcome.Answer})
				if errors.Is(err, journal.ErrConflict) {
					continue
				}
				if err != nil {
					return agent.Outcome{}, err
				}
			}
			if f != nil && follows(d.Outcome.Status) {
				if err := f.wait(ctx, *d.Outcome, st.wakeAt(*d.Outcome)); err != nil {
					return *d.Outcome, err
				}
				continue
			}
			return *d.Outcome, nil
		}
		step := *d.Step
		if step.Settle != nil {
			// The key of this execution: the run, the step, and how often
			// a person said retry.
			gen := 1
			if ss := st.steps[step.Name]; ss != nil {
				gen += ss.Retries
			}
			s := *step.Settle
			s.Key = agent.IdempotencyKey(runID, step.Name, gen)
			step.Settle = &s
		}
		if p, ok := exec.(preparer); ok {
			// Values kept by reference are read before a write's start is
			// recorded: a missing one must not look like a write that ran.
			if step, err = p.Prepare(ctx, step); err != nil {
				return agent.Outcome{}, fmt.Errorf("run %s: %w", runID, err)
			}
		}
		// The lock may have gone while the last step ran (a PostgreSQL
		// lock goes with its connection): then another process may drive
		// the run now, and this one must not start a step beside it.
		if err := lock.Held(ctx); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return agent.Outcome{}, ctxErr
			}
			return agent.Outcome{}, &journal.LockLostError{RunID: runID, Step: step.Name, Err: err}
		}
		att, timeout := fence.Attempt{Number: 1}.Here(), time.Duration(0)
		if t, ok := exec.(timeouter); ok && journal.NeedsStart(step) && step.Call != nil {
			// A write is fenced: a driver that lost its lock while it runs
			// the write (its PostgreSQL connection ended) holds it until
			// its deadline, and nobody else probes or runs it before then.
			att.Generation, timeout = 1, t.Timeout(step.Call.Name)
			if ss := st.steps[step.Name]; ss != nil {
				att.Generation += ss.Retries
			}
		}
		var gates journal.GatesFunc
		if step.Kind == agent.KindModel {
			// The calls the model asks for are gated now, once, and the
			// journal keeps the decision with the reply.
			n, _ := agent.StepTurn(step.Name)
			gates = func(res json.RawMessage) map[string]agent.Gate {
				reply, err := agent.DecodeModelReply(res)
				if err != nil {
					return nil // the loop reports the bad reply
				}
				return j.Loop.Gates(n, reply.Message.ToolCalls)
			}
		}
		tries.begin(step.Name, j.now())
		failed := false // the step ran and returned an error (not the store)
		_, err = j.guard().RunGated(ctx, runID, step, att, timeout, func(ctx context.Context) (json.RawMessage, error) {
			ctx, stop := j.watchCancel(ctx, runID, len(recs), f.changes())
			defer stop()
			if j.agentCall(&step) != "" {
				return j.runChild(ctx, runID, st, step) // its errors are the child's: no retry here
			}
			if j.OnLimitWait != nil && step.Kind == agent.KindModel {
				ctx = ratelimit.WithWaits(ctx, func(w ratelimit.Wait) { j.OnLimitWait(LimitWait{RunID: runID, Step: step.Name, Wait: w}) })
			}
			res, err := exec.Execute(ctx, step)
			failed = err != nil
			return res, err
		}, gates)
		if err == nil {
			tries = attempts{} // the step went through: no failed attempts to tell of
		}
		if err != nil && j.cancelled(runID) {
			continue // the step stopped because the run was cancelled: the next load says so
		}
		var child *childWaitError
		if errors.As(err, &child) {
			// The child waits for a person: so does this run.
			if f != nil {
				if err := f.waitChild(ctx, child); err != nil {
					return child.Outcome, err
				}
				continue
			}
			return child.Outcome, nil
		}
		if failed && j.Retry != nil && ctx.Err() == nil && (step.Kind == agent.KindModel || step.Kind == agent.KindRead) {
			if err := j.retry(ctx, runID, len(recs), step, &tries, err, f.changes()); err != nil {
				if ctx.Err() != nil {
					j.interrupted(ctx, runID, &tries)
				}
				return agent.Outcome{}, err
			}
			continue // the next load decides the step again: its next attempt
		}
		var fenced *fence.Error
		if errors.As(err, &fenced) {
			// An earlier driver's attempt may still act: wait until it cannot.
			if err := sleepUntil(ctx, fenced.Until()); err != nil {
				return agent.Outcome{}, err
			}
			continue
		}
		var ind *journal.IndeterminateError
		if errors.As(err, &ind) {
			o := agent.Outcome{Status: agent.StatusIndeterminate, Step: ind.Step}
			if ind.Probe != nil {
				o.Reason = ind.Probe.String() // what its probe answered, for the person
			}
			if ind.Holder != nil {
				o.Reason = strings.TrimPrefix(o.Reason+"; "+ind.Holder.MayRun(), "; ")
			}
			if f != nil {
				if err := f.wait(ctx, o, time.Time{}); err != nil {
					return o, err
				}
				continue
			}
			return o, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				j.interrupted(ctx, runID, &tries)
			}
			return agent.Outcome{}, fmt.Errorf("run %s: step %s: %w", runID, step.Name, err)
		}
	}
}

// signalRecords returns the records of signals.
func signalRecords(sigs []operator.Signal) []journal.Record {
	recs := make([]journal.Record, len(sigs))
	for i := range sigs {
		recs[i] = journal.Record{Type: journal.SignalRecord, Signal: &sigs[i]}
	}
	return recs
}

// preparer is an executor that reads a step's referenced values before it
// runs (execute.Executor).
type preparer interface {
	Prepare(ctx context.Context, step agent.Step) (agent.Step, error)
}

// timeouter is an executor that knows how long a tool may run: the
// deadline of a write's attempt (execute.Executor, through its tools).
type timeouter interface {
	Timeout(tool string) time.Duration
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
