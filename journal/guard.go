package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
)

// Guard applies the decision table of RunStep to the runs in a Store: it
// runs a step at most as often as its records allow. The Temporal
// activities and the local engine both run their steps through it.
type Guard struct {
	Store Store
	// Now is the clock of record times and of the fence. Default nil:
	// time.Now.
	Now func() time.Time
	// Probe asks the probe of an interrupted write. Default nil: probes
	// are not asked, and such writes wait for a person unless they have an
	// idempotency key.
	Probe ProbeFunc
}

func (j *Guard) now() time.Time {
	if j.Now != nil {
		return j.Now().UTC()
	}
	return time.Now().UTC()
}

// maxConflicts bounds how often an operation reloads after ErrConflict.
const maxConflicts = 100

// StepFunc executes a step and returns its result.
type StepFunc func(ctx context.Context) (json.RawMessage, error)

// ProbeFunc asks a write's probe (step.Settle.Probe) whether the write took
// effect. A probe that fails, times out or answers unclearly is an answer
// (agent.ProbeUnknown); the error is for a probe that could not be asked
// because ctx ended, and nothing is recorded of it.
type ProbeFunc func(ctx context.Context, step agent.Step) (agent.ProbeAnswer, error)

// RunStep executes step at most as often as the decision table allows
// ("write" is a write step not marked Idempotent; "key" and "probe" are
// what its step.Settle declares):
//
//	completed                                       -> the recorded result; fn is not called
//	started, not completed, write, reconciled done  -> the person's result, recorded as completed
//	started, not completed, write, reconciled retry -> record start, call fn, record result
//	started, not completed, write, probe            -> ask the probe (below)
//	started, not completed, write, key, no probe    -> record start, call fn again, record result
//	started, not completed, write, not reconciled   -> *IndeterminateError
//	otherwise, write                                -> record start, call fn, record result
//	otherwise, model, read or idempotent write      -> call fn, record result
//
// The probe's answer decides, and is recorded (step.probed):
//
//	found                -> its result recorded as completed; fn is not called
//	not found            -> record start, call fn again, record result
//	unknown, key         -> record start, call fn again (same key), record result
//	unknown, no key      -> *IndeterminateError with the answer; a later RunStep
//	                        does not ask again: a person decides
//
// A result settled without a person carries an agent.Settled that says
// how. Without a Probe func a probe is never asked: such a write is
// settled by its key or by a person.
//
// Only a write needs its start on disk before it runs: that record is what
// makes a crash inside it Indeterminate instead of a second effect. A
// model or read step, or a write marked Idempotent, is safe to run again,
// so it costs one append: its step.completed record, which carries the
// step's kind (and Idempotent). A crash inside such a step leaves nothing,
// and the next run runs it again. Journals written when every step had a
// start record load and resume the same way.
//
// An fn error is returned and not recorded. An error from the store means
// the record may or may not have been written.
func (j *Guard) RunStep(ctx context.Context, runID string, step agent.Step, fn StepFunc) (json.RawMessage, error) {
	return j.RunGated(ctx, runID, step, fence.Attempt{}, 0, fn, nil)
}

// GatesFunc returns what a model step's step.completed records about the
// tool calls of its result (Record.Gates).
type GatesFunc func(res json.RawMessage) map[string]agent.Gate

// RunAttempt is RunStep for one attempt of a write that is fenced: the
// step.started it records carries att with its Deadline set to now plus
// timeout (the tool's timeout), and the attempt holds the step until then.
// fn runs only while the attempt holds it, checked right before fn runs
// (one conditional store statement: the journal still ends at this start,
// or else this start is still the step's newest), and under a context that
// ends at the deadline with a cause wrapping [fence.ErrDeadline]. A write
// that finds an earlier attempt's start whose deadline plus [fence.Grace]
// has not passed does not probe it or run it again: it returns a
// [*fence.Error], or, when nothing but a person could settle it, an
// *IndeterminateError whose Holder says until when that attempt may run; a write with an idempotency
// key runs again at once (the key makes the two attempts one effect). The
// same holds for the first attempt of a generation while the previous
// generation's last attempt may run. An attempt that no longer holds its
// step when fn would run returns an error wrapping [fence.ErrLost], fn not
// called. A timeout of 0 records no deadline: nothing is fenced.
func (j *Guard) RunAttempt(ctx context.Context, runID string, step agent.Step, att fence.Attempt, timeout time.Duration, fn StepFunc) (json.RawMessage, error) {
	return j.RunGated(ctx, runID, step, att, timeout, fn, nil)
}

// RunGated is RunAttempt; gates, when not nil, adds the gating of the
// calls a model step's result asks for to its step.completed record (the
// local engine gates them there, once).
func (j *Guard) RunGated(ctx context.Context, runID string, step agent.Step, att fence.Attempt, timeout time.Duration, fn StepFunc, gates GatesFunc) (json.RawMessage, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		f := FoldSteps(recs)
		st := f[step.Name]
		if st != nil && st.Completed {
			return st.Result, nil
		}
		now := j.now()
		var settled *agent.Settled // set when this run of fn settles an interrupted write
		var before []Record        // recorded with the start, before fn runs
		if st != nil && st.Starts > 0 && st.Kind == agent.KindWrite && !st.Idempotent {
			switch {
			case st.Reconcile != nil && st.Reconcile.Outcome == operator.OutcomeDone:
				res := agent.ReconciledResult(st.Reconcile.Result)
				err := j.Store.Append(runID, len(recs), completedRecord(step, res, j.now()))
				if errors.Is(err, ErrConflict) {
					continue
				}
				if err != nil {
					return nil, err
				}
				return res, nil
			case st.Holder.Holds(now) && (st.Reconcile != nil || step.Settle == nil || step.Settle.KeyArg == ""):
				// An earlier attempt may still act: no second opinion yet.
				if st.Reconcile == nil && (step.Settle == nil || step.Settle.Probe == nil || j.Probe == nil) {
					return nil, &IndeterminateError{Step: step.Name, Holder: st.Holder}
				}
				return nil, &fence.Error{Step: step.Name, Holder: *st.Holder}
			case st.Reconcile != nil:
				// reconciled retry: run it once more, under a new start record
			case st.Holder.Holds(now):
				// Its key makes a second run the same effect: run it again at once.
				settled = &agent.Settled{By: agent.SettledByKey, Key: step.Settle.Key, Runs: st.Starts + 1}
			default:
				var res json.RawMessage
				res, settled, before, err = j.settle(ctx, runID, recs, step, st)
				if errors.Is(err, ErrConflict) {
					continue
				}
				if res != nil || err != nil {
					return res, err
				}
			}
		} else if prev := f[previousGeneration(step.Name)]; NeedsStart(step) && prev != nil && !prev.Completed && prev.Holder.Holds(now) {
			return nil, &fence.Error{Step: step.Name, Holder: *prev.Holder}
		}
		fenced := NeedsStart(step) && timeout > 0
		if NeedsStart(step) {
			rec := Record{Type: StepStarted, Step: step.Name, Kind: step.Kind, Idempotent: step.Idempotent, Settles: settles(step)}
			if fenced {
				att.Deadline = j.now().Add(timeout)
				rec.Attempt = &att
			}
			before = append(before, rec)
		}
		if len(before) > 0 {
			err = j.Store.Append(runID, len(recs), before...)
			if errors.Is(err, ErrConflict) {
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		if fenced {
			if err := j.holds(runID, step.Name, len(recs)+len(before), att); err != nil {
				return nil, err
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadlineCause(ctx, att.Deadline, fmt.Errorf("step %s: %w (%s)", step.Name, fence.ErrDeadline, operator.FormatUntil(att.Deadline)))
			defer cancel()
		}
		res, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		if settled != nil {
			if res, err = withSettled(res, settled); err != nil {
				return nil, fmt.Errorf("step %s: %w", step.Name, err)
			}
		}
		rec := completedRecord(step, res, j.now())
		if gates != nil {
			rec.Gates = gates(res)
		}
		return j.complete(runID, rec)
	}
	return nil, fmt.Errorf("run step %s of %s: %w %d times", step.Name, runID, ErrConflict, maxConflicts)
}

// holds checks, right before a fenced write runs, that the attempt whose
// start is record seen-1 still holds the step: its deadline has not passed
// on this host's clock, and the journal still ends at its start (one
// conditional statement: an append of nothing after seen records) or, when
// other steps appended since, its start is still the step's newest and
// nothing settled it.
func (j *Guard) holds(runID, step string, seen int, att fence.Attempt) error {
	if !j.now().Before(att.Deadline) {
		return fmt.Errorf("step %s: %s: %w: its deadline %s passed before the tool ran; the tool did not run", step, &att, fence.ErrLost, operator.FormatUntil(att.Deadline))
	}
	err := j.Store.Append(runID, seen)
	if !errors.Is(err, ErrConflict) {
		return err
	}
	recs, err := j.Store.Load(runID)
	if err != nil {
		return err
	}
	if st := FoldSteps(recs)[step]; st == nil || st.StartSeq != seen-1 || st.Completed || st.Reconcile != nil || st.Probed != nil {
		return fmt.Errorf("step %s: %s: %w: a later attempt took it; the tool did not run", step, &att, fence.ErrLost)
	}
	return nil
}

// previousGeneration is the guard's name of the generation before a
// step's ("RUN/tool/2/0/x#3" -> "RUN/tool/2/0/x#2", "...#2" -> "..."), or
// "" for a first generation.
func previousGeneration(name string) string {
	i := strings.LastIndexByte(name, '#')
	if i < 0 {
		return ""
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 2 {
		return ""
	}
	if n == 2 {
		return name[:i]
	}
	return name[:i+1] + strconv.Itoa(n-1)
}

// settle decides what to do with a write that started, never recorded its
// result and was not reconciled (RunStep's table). It returns the step's
// result when it is settled without running fn, or the note and the
// records to write before fn runs again; none of them and no error means
// nothing can settle it here, which is an error too: *IndeterminateError.
func (j *Guard) settle(ctx context.Context, runID string, recs []Record, step agent.Step, st *StepState) (json.RawMessage, *agent.Settled, []Record, error) {
	s := step.Settle
	if s == nil || (s.KeyArg == "" && s.Probe == nil) {
		return nil, nil, nil, &IndeterminateError{Step: step.Name}
	}
	keyed := s.KeyArg != ""
	if s.Probe == nil || j.Probe == nil {
		if !keyed {
			return nil, nil, nil, &IndeterminateError{Step: step.Name}
		}
		return nil, &agent.Settled{By: agent.SettledByKey, Key: s.Key, Runs: st.Starts + 1}, nil, nil
	}
	if st.Probed != nil && st.Probed.Verdict == agent.ProbeUnknown && !keyed {
		return nil, nil, nil, &IndeterminateError{Step: step.Name, Probe: st.Probed} // asked already: a person decides
	}
	ans, err := j.Probe(ctx, step)
	if err != nil {
		return nil, nil, nil, err
	}
	result := ans.Result
	ans.Result = nil // the step's result, recorded once, in step.completed
	probed := Record{Type: StepProbed, Step: step.Name, Probe: &ans}
	note := &agent.Settled{By: agent.SettledByProbe, Probe: &ans, Runs: st.Starts + 1}
	if keyed {
		note.Key = s.Key // a write without a key argument never ran with one
	}
	switch {
	case ans.Verdict == agent.ProbeFound:
		note.Runs = st.Starts
		res, err := withSettled(result, note)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("step %s: probe %s: %w", step.Name, ans.Tool, err)
		}
		if err := j.Store.Append(runID, len(recs), probed, completedRecord(step, res, j.now())); err != nil {
			return nil, nil, nil, err
		}
		return res, nil, nil, nil
	case ans.Verdict == agent.ProbeNotFound:
		return nil, note, []Record{probed}, nil
	case keyed:
		note.By = agent.SettledByKey
		return nil, note, []Record{probed}, nil
	}
	if err := j.Store.Append(runID, len(recs), probed); err != nil {
		return nil, nil, nil, err
	}
	return nil, nil, nil, &IndeterminateError{Step: step.Name, Probe: &ans}
}

// settles is the Settles mark of a write's start record.
func settles(step agent.Step) string {
	s := step.Settle
	switch {
	case !NeedsStart(step) || s == nil:
		return ""
	case s.KeyArg != "" && s.Probe != nil:
		return "key+probe"
	case s.KeyArg != "":
		return "key"
	case s.Probe != nil:
		return "probe"
	}
	return ""
}

// withSettled returns the recorded tool result res carrying note.
func withSettled(res json.RawMessage, note *agent.Settled) (json.RawMessage, error) {
	r, err := agent.DecodeToolResult(res)
	if err != nil {
		return nil, fmt.Errorf("the result is not a tool result: %w", err)
	}
	r.Settled = note
	return agent.EncodeToolResult(r), nil
}

// NeedsStart reports whether step must have a durable start record before
// it runs: a write that is not idempotent.
func NeedsStart(step agent.Step) bool {
	return step.Kind == agent.KindWrite && !step.Idempotent
}

// completedRecord is the step.completed record of step with result res.
func completedRecord(step agent.Step, res json.RawMessage, at time.Time) Record {
	return Record{Type: StepCompleted, Step: step.Name, Kind: step.Kind, Idempotent: step.Idempotent, Result: res, At: at}
}

// complete records the result of a step that ran: its step.completed rec.
func (j *Guard) complete(runID string, rec Record) (json.RawMessage, error) {
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		if st := FoldSteps(recs)[rec.Step]; st != nil && st.Completed {
			return st.Result, nil // settled by someone else meanwhile
		}
		err = j.Store.Append(runID, len(recs), rec)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return rec.Result, nil
	}
	return nil, fmt.Errorf("record result of %s in %s: %w %d times", rec.Step, runID, ErrConflict, maxConflicts)
}
