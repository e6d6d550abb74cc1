package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
)

// Journal applies the decision table of RunStep to the runs in a Store and
// drives local runs (Run, Signal, Show).
type Journal struct {
	Store Store
	// Loop is the agent loop local runs follow; RunStep does not use it.
	Loop agent.Loop
	// Now is the clock of approval timeouts and record times. Default nil:
	// time.Now.
	Now func() time.Time
	// Limits is the budget Run records for a run it starts (zero: the
	// defaults of agent.Budget); a resumed run keeps its recorded budget.
	Limits agent.Budget
	// Probe asks the probe of an interrupted write (RunStep). Default nil:
	// probes are not asked, and such writes wait for a person unless they
	// have an idempotency key.
	Probe ProbeFunc
	// Retry is how Run retries a model or read step that failed, and says
	// why it stopped when it gives up (the local engine's policy:
	// execute.Retry). Default nil: a failed step ends Run with its error,
	// and nothing is recorded.
	Retry Retry
	// OnRetry is told of each retry before Run waits for it (the local
	// driver prints it). Default nil: nobody is told.
	OnRetry func(Retrying)
	// Session is how long a run that Run starts waits Idle for a message
	// after each answer (a session, recorded in its run.started); a
	// resumed run keeps its own. Default 0: the first answer completes
	// the run.
	Session time.Duration
	// Follow makes Run follow its run: where it waits for a person
	// (AwaitingApproval, Indeterminate, BudgetExceeded) or, a session, for
	// a message (Idle), Run keeps the run's lock, tells OnWait, and sleeps
	// on a Watch of the journal until a record lands (an operator's
	// signal, a cancel), an approval timeout or the session's idle time
	// passes; then it goes on. A running step learns of a cancel through
	// the same Watch. When ctx ends while it sleeps, Run returns the
	// outcome it waited in and a *FollowStoppedError. Default false: Run
	// returns at the first wait.
	Follow bool
	// OnWait is told, when Run follows, each time the run starts to wait
	// anew (another status, other markers, another answer). Default nil.
	OnWait func(agent.Outcome)
}

// FollowStoppedError is Run, following its run, stopped by its context
// while the run waited: the run is as it was (Outcome), and a later Run
// goes on from there.
type FollowStoppedError struct {
	RunID   string
	Outcome agent.Outcome
	Err     error // the context's error
}

func (e *FollowStoppedError) Error() string {
	return fmt.Sprintf("stopped following run %s (%v); it is %s as it was", e.RunID, e.Err, e.Outcome.Status)
}

// Unwrap returns the context's error.
func (e *FollowStoppedError) Unwrap() error { return e.Err }

// Retry is the policy Run follows when a model or read step fails
// (execute.Retry is one).
type Retry interface {
	// Attempts is the most attempts of one step in one Run.
	Attempts() int
	// Next says whether step, whose attempt n (from 1) failed with err,
	// is tried again, and after how long: never a write, never a failure
	// that trying again cannot mend, never past Attempts.
	Next(step agent.Step, n int, err error) (wait time.Duration, again bool)
	// Text says what err was in plain words, without secrets: what the
	// journal records and the driver prints.
	Text(err error) string
}

// Retrying is a failed attempt of a step that Run tries again after Wait.
type Retrying struct {
	RunID, Step string
	// Attempt is the attempt that failed (from 1), of at most Attempts.
	Attempt, Attempts int
	// Error is its error, in plain words (Retry.Text).
	Error string
	Wait  time.Duration
}

// String says it in one line: "llm/1: attempt 2 of 10 failed:
// NetworkError: connection refused (...); next attempt in 2s".
func (r Retrying) String() string {
	return fmt.Sprintf("%s: attempt %d of %d failed: %s; next attempt in %s", r.Step, r.Attempt, r.Attempts, r.Error, roundDuration(r.Wait))
}

// StoppedError is a run that Run stopped because a model or read step
// failed on every attempt Retry allowed, or with an error that trying
// again cannot mend: its journal records why (a run.stopped record), and a
// later Run resumes it. It unwraps to the step's last error.
type StoppedError struct {
	RunID string
	Stop  Stop
	Err   error
}

func (e *StoppedError) Error() string { return "run " + e.RunID + " " + e.Stop.String() }

// Unwrap returns the step's last error.
func (e *StoppedError) Unwrap() error { return e.Err }

func (j *Journal) now() time.Time {
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
func (j *Journal) RunStep(ctx context.Context, runID string, step agent.Step, fn StepFunc) (json.RawMessage, error) {
	return j.runAttempt(ctx, runID, step, fence.Attempt{}, 0, fn, nil)
}

// gatesFunc returns what a model step's step.completed records about the
// tool calls of its result (Record.Gates).
type gatesFunc func(res json.RawMessage) map[string]agent.Gate

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
func (j *Journal) RunAttempt(ctx context.Context, runID string, step agent.Step, att fence.Attempt, timeout time.Duration, fn StepFunc) (json.RawMessage, error) {
	return j.runAttempt(ctx, runID, step, att, timeout, fn, nil)
}

// runAttempt is RunAttempt; gates, when not nil, adds the gating of the
// calls a model step's result asks for to its step.completed record.
func (j *Journal) runAttempt(ctx context.Context, runID string, step agent.Step, att fence.Attempt, timeout time.Duration, fn StepFunc, gates gatesFunc) (json.RawMessage, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		f := fold(recs)
		st := f.steps[step.Name]
		if st != nil && st.completed {
			return st.result, nil
		}
		now := j.now()
		var settled *agent.Settled // set when this run of fn settles an interrupted write
		var before []Record        // recorded with the start, before fn runs
		if st != nil && st.starts > 0 && st.kind == agent.KindWrite && !st.idempotent {
			switch {
			case st.reconcile != nil && st.reconcile.Outcome == operator.OutcomeDone:
				res := agent.ReconciledResult(st.reconcile.Result)
				err := j.Store.Append(runID, len(recs), completedRecord(step, res, j.now()))
				if errors.Is(err, ErrConflict) {
					continue
				}
				if err != nil {
					return nil, err
				}
				return res, nil
			case st.holder.Holds(now) && (st.reconcile != nil || step.Settle == nil || step.Settle.KeyArg == ""):
				// An earlier attempt may still act: no second opinion yet.
				if st.reconcile == nil && (step.Settle == nil || step.Settle.Probe == nil || j.Probe == nil) {
					return nil, &IndeterminateError{Step: step.Name, Holder: st.holder}
				}
				return nil, &fence.Error{Step: step.Name, Holder: *st.holder}
			case st.reconcile != nil:
				// reconciled retry: run it once more, under a new start record
			case st.holder.Holds(now):
				// Its key makes a second run the same effect: run it again at once.
				settled = &agent.Settled{By: agent.SettledByKey, Key: step.Settle.Key, Runs: st.starts + 1}
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
		} else if prev := f.steps[previousGeneration(step.Name)]; needsStart(step) && prev != nil && !prev.completed && prev.holder.Holds(now) {
			return nil, &fence.Error{Step: step.Name, Holder: *prev.holder}
		}
		fenced := needsStart(step) && timeout > 0
		if needsStart(step) {
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
func (j *Journal) holds(runID, step string, seen int, att fence.Attempt) error {
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
	if st := fold(recs).steps[step]; st == nil || st.startSeq != seen-1 || st.completed || st.reconcile != nil || st.probed != nil {
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
func (j *Journal) settle(ctx context.Context, runID string, recs []Record, step agent.Step, st *stepState) (json.RawMessage, *agent.Settled, []Record, error) {
	s := step.Settle
	if s == nil || (s.KeyArg == "" && s.Probe == nil) {
		return nil, nil, nil, &IndeterminateError{Step: step.Name}
	}
	keyed := s.KeyArg != ""
	if s.Probe == nil || j.Probe == nil {
		if !keyed {
			return nil, nil, nil, &IndeterminateError{Step: step.Name}
		}
		return nil, &agent.Settled{By: agent.SettledByKey, Key: s.Key, Runs: st.starts + 1}, nil, nil
	}
	if st.probed != nil && st.probed.Verdict == agent.ProbeUnknown && !keyed {
		return nil, nil, nil, &IndeterminateError{Step: step.Name, Probe: st.probed} // asked already: a person decides
	}
	ans, err := j.Probe(ctx, step)
	if err != nil {
		return nil, nil, nil, err
	}
	result := ans.Result
	ans.Result = nil // the step's result, recorded once, in step.completed
	probed := Record{Type: StepProbed, Step: step.Name, Probe: &ans}
	note := &agent.Settled{By: agent.SettledByProbe, Probe: &ans, Runs: st.starts + 1}
	if keyed {
		note.Key = s.Key // a write without a key argument never ran with one
	}
	switch {
	case ans.Verdict == agent.ProbeFound:
		note.Runs = st.starts
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
	case !needsStart(step) || s == nil:
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

// needsStart reports whether step must have a durable start record before
// it runs: a write that is not idempotent.
func needsStart(step agent.Step) bool {
	return step.Kind == agent.KindWrite && !step.Idempotent
}

// completedRecord is the step.completed record of step with result res.
func completedRecord(step agent.Step, res json.RawMessage, at time.Time) Record {
	return Record{Type: StepCompleted, Step: step.Name, Kind: step.Kind, Idempotent: step.Idempotent, Result: res, At: at}
}

// complete records the result of a step that ran: its step.completed rec.
func (j *Journal) complete(runID string, rec Record) (json.RawMessage, error) {
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		if st := fold(recs).steps[rec.Step]; st != nil && st.completed {
			return st.result, nil // settled by someone else meanwhile
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

// stepState is what the journal knows about one step.
type stepState struct {
	kind       agent.Kind // from its step.started or step.completed records
	idempotent bool
	starts     int // how many step.started records it has (a write's generation)
	completed  bool
	result     json.RawMessage
	at         time.Time          // when its step.completed was written, if known
	reconcile  *operator.Signal   // the reconciliation of the latest start, if any
	settles    string             // the Settles mark of its latest start
	probed     *agent.ProbeAnswer // the probe's answer since its latest start, if any
	retries    int                // how often a person said retry: its generation is one more
	holder     *fence.Attempt     // the attempt of its latest start, if recorded
	startSeq   int                // the index of its latest step.started record
}

// state is the fold of a run's records.
type state struct {
	started   bool
	input     []agent.Message
	steps     map[string]*stepState
	gates     map[string]agent.Gate // by marker, as recorded when the model asked
	completed bool
	answer    string
	cancelled bool
	// stopped is why the last driver stopped the run (run.stopped), until
	// a later record shows the run went on.
	stopped *Stop
	// ops is what the signal records set, applied as operator.Run.Apply
	// applies them: the decisions and the user messages by the model step
	// they go to (in its Facts), and the budget (as started, raised by
	// budget signals). A reconciliation is kept by its step instead
	// (stepState.reconcile): done is recorded as the step's step.completed
	// when the run goes on (RunStep), so facts takes no result from ops.
	ops operator.Run
	// session is how long the run waits Idle after an answer (run.started;
	// 0: not a session).
	session time.Duration
	// models is the newest model step recorded: a message goes to the one
	// after it. A message recorded while another process runs model step
	// models+1 goes to that step, which may have been asked without it:
	// send messages to a local run while no process drives it.
	models int
}

func fold(recs []Record) *state {
	s := &state{steps: map[string]*stepState{}, ops: operator.Run{Facts: agent.NewFacts()}}
	step := func(name string) *stepState {
		st := s.steps[name]
		if st == nil {
			st = &stepState{}
			s.steps[name] = st
		}
		return st
	}
	for i, r := range recs {
		if r.Type != SignalRecord {
			s.stopped = nil // the run went on (or ended) after a stop
		}
		switch r.Type {
		case RunStarted:
			s.started, s.input, s.session = true, r.Input, r.Session
			if r.Budget != nil {
				s.ops.Budget = *r.Budget
			}
		case StepStarted:
			st := step(r.Step)
			st.kind, st.idempotent, st.settles = r.Kind, r.Idempotent, r.Settles
			st.starts++
			st.probed = nil
			st.holder, st.startSeq = r.Attempt, i
			if n, tool := agent.StepTurn(r.Step); !tool && n > s.models {
				s.models = n
			}
			st.reconcile = nil
		case StepCompleted:
			st := step(r.Step)
			st.completed, st.result, st.at = true, r.Result, r.At
			for m, g := range r.Gates {
				if s.gates == nil {
					s.gates = map[string]agent.Gate{}
				}
				s.gates[m] = g
			}
			if r.Kind != "" { // journals from before step.completed carried the kind have it in step.started only
				st.kind, st.idempotent = r.Kind, r.Idempotent
			}
			if n, tool := agent.StepTurn(r.Step); !tool && n > s.models {
				s.models = n // model steps have no step.started record
			}
		case StepProbed:
			step(r.Step).probed = r.Probe
		case SignalRecord:
			if r.Signal == nil {
				continue
			}
			s.ops.Models = s.models
			s.ops.Apply(*r.Signal)
			if sig := *r.Signal; sig.Name == operator.SignalReconcile {
				st := step(sig.Step)
				st.reconcile = &sig
				if sig.Outcome == operator.OutcomeRetry {
					st.retries++
				}
			}
		case RunCompleted:
			s.completed, s.answer = true, r.Answer
		case RunCancelled:
			s.cancelled = true
		case RunStopped:
			s.stopped = r.Stopped
		}
	}
	return s
}

// closed returns the status of a run that ended, "" while it goes on.
func (s *state) closed() agent.Status {
	switch {
	case s.completed:
		return agent.StatusCompleted
	case s.cancelled:
		return agent.StatusCancelled
	}
	return ""
}

// cancelledOutcome is the outcome of a cancelled run: it names a write
// that started and has no result, as it may have taken effect.
func (s *state) cancelledOutcome() agent.Outcome {
	var open []string
	for name, st := range s.steps {
		if st.starts > 0 && !st.completed && st.kind == agent.KindWrite && !st.idempotent && st.reconcile == nil {
			open = append(open, name)
		}
	}
	slices.Sort(open)
	return agent.Outcome{Status: agent.StatusCancelled, Reason: agent.CancelledReason(strings.Join(open, ", "))}
}

// expired returns the denials of the calls pending in o whose approval
// timeout has passed at now; the timeout runs from the step.completed of
// the model step that asked for the call (none in older journals: those
// calls never expire).
func (s *state) expired(o *agent.Outcome, now time.Time) []operator.Signal {
	if o == nil || o.Status != agent.StatusAwaitingApproval {
		return nil
	}
	var out []operator.Signal
	for _, p := range o.Pending {
		if _, decided := s.ops.Facts.Decisions[p.Marker]; decided || p.Expires <= 0 {
			continue
		}
		n, _ := agent.StepTurn(p.Marker)
		model := s.steps[agent.ModelStep(n)]
		if model == nil || model.at.IsZero() || now.Before(model.at.Add(p.Expires)) {
			continue
		}
		out = append(out, operator.Signal{Name: operator.SignalDeny, Marker: p.Marker, Reason: agent.ExpiredReason(p.Expires)})
	}
	return out
}

// facts turns the fold into the loop's facts.
func (s *state) facts() *agent.Facts {
	f := agent.NewFacts()
	for name, st := range s.steps {
		switch {
		case st.completed:
			f.Results[name] = st.result
		case st.waitsForPerson():
			f.Indeterminate[name] = true
		}
	}
	for m, a := range s.ops.Facts.Decisions {
		f.Decisions[m] = a
	}
	f.Gates = s.gates
	for at, msgs := range s.ops.Facts.Messages {
		f.Messages[at] = slices.Clone(msgs)
	}
	return f
}

// waitsForPerson reports whether the step is a write that started, never
// recorded its result, was not reconciled, and cannot be settled without a
// person: it declares no key and no probe, or its probe answered unknown
// and it has no key. A write that can be settled is run again by the loop,
// and RunStep settles it.
func (st *stepState) waitsForPerson() bool {
	if st.completed || st.starts == 0 || st.kind != agent.KindWrite || st.idempotent || st.reconcile != nil {
		return false
	}
	switch st.settles {
	case "key", "key+probe":
		return false
	case "probe":
		return st.probed != nil && st.probed.Verdict == agent.ProbeUnknown
	}
	return true
}

// idleUntil is when a session that answered stops waiting for a message:
// its idle time after the answer's step.completed (zero when that record
// has no time).
func (s *state) idleUntil() time.Time {
	if st := s.steps[agent.ModelStep(s.models)]; st != nil && !st.at.IsZero() {
		return st.at.Add(s.session)
	}
	return time.Time{}
}

// usage returns the model calls the run made and the tokens they used.
func (s *state) usage() (turns int, u agent.Usage) {
	for name, st := range s.steps {
		if n, tool := agent.StepTurn(name); st.completed && n > 0 && !tool {
			turns++
			if reply, err := agent.DecodeModelReply(st.result); err == nil {
				u = u.Add(reply.Usage)
			}
		}
	}
	return turns, u
}

// decide is where the loop stands over the fold, under the run's budget. A
// session that answered is Idle until its idle time passed after the
// answer's record (idleUntil); then it is Completed.
func (j *Journal) decide(s *state) agent.Decision {
	_, used := s.usage()
	d := s.ops.Budget.Limit(j.Loop.Next(agent.Start(s.input), s.facts()), used)
	if o := d.Outcome; o != nil && o.Status == agent.StatusCompleted && s.session > 0 {
		if until := s.idleUntil(); until.IsZero() || j.now().Before(until) {
			idle := *o
			idle.Status = agent.StatusIdle
			d.Outcome = &idle
		}
	}
	if o := d.Outcome; o != nil && o.Status == agent.StatusIndeterminate && o.Reason == "" {
		if st := s.steps[o.Step]; st != nil && st.probed != nil {
			o.Reason = st.probed.String() // what its probe answered, for the person
		}
	}
	return d
}

// sameInput reports whether two inputs are the same messages.
func sameInput(a, b []agent.Message) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
