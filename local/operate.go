package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// Signal records an operator's approve, deny, reconcile, budget or message
// after checking its shape (operator.CheckShape) and then the run's current
// state (check); a run that ended refuses every signal. A refused signal
// returns an error wrapping operator.ErrInvalid (or operator.ErrUnknownRun)
// that says what would be valid, and writes nothing.
func (j *Engine) Signal(ctx context.Context, runID string, sig operator.Signal) error {
	if err := operator.CheckShape(sig); err != nil {
		return err
	}
	if e, err := j.of(runID); err != nil || e != j {
		if err != nil {
			return err
		}
		return e.Signal(ctx, runID, sig) // a child run, with its agent's loop
	}
	if c, child := j.forward(runID, sig); c != nil {
		// The run is at an agent call whose child run has the markers
		// and steps a person decides: the child checks and records it.
		return c.Signal(ctx, child, sig)
	}
	if sig.Name == operator.SignalBudget && j.parentID != "" {
		root := j.Root(runID)
		return fmt.Errorf("%w budget: run %s is a child run of agent %s, whose budget is its share of its top run's; raise the budget of run %s instead", operator.ErrInvalid, runID, j.Agent, root)
	}
	return j.signal(ctx, runID, sig)
}

// signal is Signal on this engine's run, its shape checked.
func (j *Engine) signal(ctx context.Context, runID string, sig operator.Signal) error {
	return j.update(ctx, runID, "signal", func(st *state) ([]journal.Record, bool, error) {
		if denials := st.expired(j.decide(st).Outcome, j.now()); len(denials) > 0 {
			// The approval timeout passed before this input: the calls are
			// denied first, as a driver would have done.
			return signalRecords(denials), true, nil
		}
		if err := j.check(runID, st, sig); err != nil {
			return nil, false, err
		}
		return []journal.Record{{Type: journal.SignalRecord, Signal: &sig}}, false, nil
	})
}

// Cancel ends a run as Cancelled: a process driving it stops its running
// step (within cancelPoll) and runs nothing more; a later Drive reports it
// Cancelled. A write that started and has no result is named by the
// outcome, as it may have taken effect. A run that already ended is
// refused with its status.
func (j *Engine) Cancel(ctx context.Context, runID string) error {
	if e, err := j.of(runID); err != nil || e != j {
		if err != nil {
			return err
		}
		return e.Cancel(ctx, runID)
	}
	err := j.update(ctx, runID, "cancel", func(st *state) ([]journal.Record, bool, error) {
		if c := st.closed(); c != "" {
			return nil, false, operator.Ended("cancel", c)
		}
		return []journal.Record{{Type: journal.RunCancelled}}, false, nil
	})
	if err != nil {
		return err
	}
	// Then its child run, if it is at an agent call: recorded after the
	// run's own cancel, so that its driver, seeing the child Cancelled,
	// finds the run cancelled too and goes no further.
	return j.cancelChild(ctx, runID)
}

// update appends to an existing run's journal the records decide returns
// for its current state, loading again and deciding anew when another
// writer appended first. When decide says again, it appends and decides
// once more (for records that must precede the operator's own).
func (j *Engine) update(ctx context.Context, runID, op string, decide func(st *state) (recs []journal.Record, again bool, err error)) error {
	if err := operator.ValidRunID(runID); err != nil {
		return err
	}
	for range maxConflicts {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, st, err := j.load(runID)
		if err != nil {
			return err
		}
		if !st.started {
			return fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
		}
		add, again, err := decide(st)
		if err != nil {
			return err
		}
		err = j.Store.Append(runID, len(recs), add...)
		if errors.Is(err, journal.ErrConflict) || (err == nil && again) {
			continue
		}
		return err
	}
	return fmt.Errorf("%s %s: %w %d times", op, runID, journal.ErrConflict, maxConflicts)
}

// check checks a signal whose shape passed against the run's state
// (operator.Check), over a Stand filled from the journal.
func (j *Engine) check(runID string, st *state, sig operator.Signal) error {
	d := j.decide(st)
	status := st.closed()
	if o := d.Outcome; status == "" && o != nil && o.Status.Terminal() {
		status = o.Status
	}
	turns, used := st.usage()
	turns, used = turns+st.delegated, used.Add(st.delegatedUsage)
	if o, child := j.waitsOnChild(runID, d); child != nil {
		// Its child run's calls count as the run's, and its wait is the run's.
		turns, used = turns+child.Turns, used.Add(child.Usage)
		if o != nil {
			d.Outcome = o
		}
	}
	s := operator.Stand{Local: true, Status: status, Outcome: d.Outcome, Facts: st.facts(), Budget: st.ops.Budget, Turns: turns, Usage: used, Now: j.now()}
	if ss := st.steps[sig.Step]; ss != nil && ss.Holder != nil && !ss.Holder.Gone() {
		s.Holder = &operator.Holder{Step: sig.Step, Attempt: ss.Holder.String(), Until: ss.Holder.Until()}
	}
	return operator.Check(sig, s)
}
