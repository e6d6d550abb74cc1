package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Run starts the run runID with input, or resumes it when its journal
// already holds the same input, and drives the agent loop until the run
// completes or needs a person. Every step goes through RunStep, so a
// resumed run calls no model and no tool twice for one step. A Failed
// outcome is returned as an outcome, not an error; an error means the run
// could not go on (a store failure, a step that failed) and may be resumed.
// While it drives the run it holds the run's lock when the Store is a
// Locker: a run another process drives is a *BusyError, and nothing is
// written. Before every step it checks that it still holds the lock; a
// lost lock is a *LockLostError, and the step does not run.
func (j *Journal) Run(ctx context.Context, runID string, input []agent.Message, exec agent.Executor) (agent.Outcome, error) {
	if err := ValidRunID(runID); err != nil {
		return agent.Outcome{}, err
	}
	if len(input) == 0 {
		return agent.Outcome{}, fmt.Errorf("%w input: the prompt is empty; want at least one message", ErrInvalid)
	}
	if err := j.begin(runID, input); err != nil {
		return agent.Outcome{}, err
	}
	// One driver at a time (Locker), taken once the input is known good so
	// that a refused prompt touches nothing; begin writes only run.started,
	// which two drivers of a new run agree on.
	lock, err := j.lockRun(ctx, runID)
	if err != nil {
		return agent.Outcome{}, err
	}
	defer lock.Release()
	for {
		if err := ctx.Err(); err != nil {
			return agent.Outcome{}, err
		}
		recs, err := j.Store.Load(runID)
		if err != nil {
			return agent.Outcome{}, err
		}
		st := fold(recs)
		if st.completed {
			return agent.Outcome{Status: agent.StatusCompleted, Answer: st.answer, CutOff: j.cutOff(st)}, nil
		}
		if st.cancelled {
			return st.cancelledOutcome(), nil
		}
		d := j.decide(st)
		if denials := st.expired(d.Outcome, j.now()); len(denials) > 0 {
			// Nobody decided in time: the calls are denied and the model
			// is told.
			err := j.Store.Append(runID, len(recs), signalRecords(denials)...)
			if err != nil && !errors.Is(err, ErrConflict) {
				return agent.Outcome{}, err
			}
			continue
		}
		if d.Outcome != nil {
			if d.Outcome.Status == agent.StatusCompleted {
				err := j.Store.Append(runID, len(recs), Record{Type: RunCompleted, Answer: d.Outcome.Answer})
				if errors.Is(err, ErrConflict) {
					continue
				}
				if err != nil {
					return agent.Outcome{}, err
				}
			}
			return *d.Outcome, nil
		}
		step := *d.Step
		if step.Settle != nil {
			// The key of this execution: the run, the step, and how often
			// a person said retry.
			gen := 1
			if ss := st.steps[step.Name]; ss != nil {
				gen += ss.retries
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
			return agent.Outcome{}, &LockLostError{RunID: runID, Step: step.Name, Err: err}
		}
		att, timeout := Attempt{Number: 1}.Here(), time.Duration(0)
		if t, ok := exec.(timeouter); ok && needsStart(step) && step.Call != nil {
			// A write is fenced: a driver that lost its lock while it runs
			// the write (its PostgreSQL connection ended) holds it until
			// its deadline, and nobody else probes or runs it before then.
			att.Generation, timeout = 1, t.Timeout(step.Call.Name)
			if ss := st.steps[step.Name]; ss != nil {
				att.Generation += ss.retries
			}
		}
		var gates gatesFunc
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
		_, err = j.runAttempt(ctx, runID, step, att, timeout, func(ctx context.Context) (json.RawMessage, error) {
			ctx, stop := j.watchCancel(ctx, runID, len(recs))
			defer stop()
			return exec.Execute(ctx, step)
		}, gates)
		if err != nil && j.cancelled(runID) {
			continue // the step stopped because the run was cancelled: the next load says so
		}
		var fence *FenceError
		if errors.As(err, &fence) {
			// An earlier driver's attempt may still act: wait until it cannot.
			if err := sleepUntil(ctx, fence.Until()); err != nil {
				return agent.Outcome{}, err
			}
			continue
		}
		var ind *IndeterminateError
		if errors.As(err, &ind) {
			o := agent.Outcome{Status: agent.StatusIndeterminate, Step: ind.Step}
			if ind.Probe != nil {
				o.Reason = ind.Probe.String() // what its probe answered, for the person
			}
			if ind.Holder != nil {
				o.Reason = strings.TrimPrefix(o.Reason+"; "+ind.Holder.MayRun(), "; ")
			}
			return o, nil
		}
		if err != nil {
			return agent.Outcome{}, fmt.Errorf("run %s: step %s: %w", runID, step.Name, err)
		}
	}
}

// signalRecords returns the records of signals.
func signalRecords(sigs []Signal) []Record {
	recs := make([]Record, len(sigs))
	for i := range sigs {
		recs[i] = Record{Type: SignalRecord, Signal: &sigs[i]}
	}
	return recs
}

// errCancelled is the cause of a step context cancelled by a run.cancelled
// record.
var errCancelled = errors.New("the run was cancelled")

// cancelled reports whether the run's journal holds a run.cancelled
// record; false when it cannot be read.
func (j *Journal) cancelled(runID string) bool {
	recs, err := j.Store.Load(runID)
	return err == nil && fold(recs).cancelled
}

// cancelPoll is how often a running step looks for a cancel.
const cancelPoll = 250 * time.Millisecond

// watchCancel returns ctx, cancelled with errCancelled as soon as the run's
// journal (which held seen records) gets a run.cancelled record, and a
// function that stops watching.
func (j *Journal) watchCancel(ctx context.Context, runID string, seen int) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(cancelPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			recs, err := j.Store.Load(runID)
			if err != nil {
				continue // the step's own store calls report it
			}
			for _, r := range recs[min(seen, len(recs)):] {
				if r.Type == RunCancelled {
					cancel(errCancelled)
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
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
func (j *Journal) begin(runID string, input []agent.Message) error {
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			st := fold(recs)
			if !st.started {
				return fmt.Errorf("run %s: the journal does not start with %s: %w", runID, RunStarted, ErrCorrupt)
			}
			if !sameInput(st.input, input) {
				return fmt.Errorf("run %s: %w; resume it with the prompt it started with, or choose another run id", runID, ErrInputMismatch)
			}
			return nil
		}
		limits := j.Limits.WithDefaults()
		err = j.Store.Append(runID, 0, Record{Type: RunStarted, Input: input, Budget: &limits})
		if errors.Is(err, ErrConflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("start %s: %w %d times", runID, ErrConflict, maxConflicts)
}

// Signal records an operator's approve, deny, reconcile, budget or message after
// checking it against the run's current state; a run that ended (Completed
// or Failed) refuses every signal. A refused signal returns an error
// wrapping ErrInvalid (or ErrUnknownRun) that says what would be valid,
// and writes nothing.
func (j *Journal) Signal(ctx context.Context, runID string, sig Signal) error {
	return j.update(ctx, runID, "signal", func(st *state) ([]Record, bool, error) {
		if denials := st.expired(j.decide(st).Outcome, j.now()); len(denials) > 0 {
			// The approval timeout passed before this input: the calls are
			// denied first, as a driver would have done.
			return signalRecords(denials), true, nil
		}
		if err := j.check(st, sig); err != nil {
			return nil, false, err
		}
		return []Record{{Type: SignalRecord, Signal: &sig}}, false, nil
	})
}

// Cancel ends a run as Cancelled: a process driving it stops its running
// step (within cancelPoll) and runs nothing more; a later Run reports it
// Cancelled. A write that started and has no result is named by the
// outcome, as it may have taken effect. A run that already ended is
// refused with its status.
func (j *Journal) Cancel(ctx context.Context, runID string) error {
	return j.update(ctx, runID, "cancel", func(st *state) ([]Record, bool, error) {
		if c := st.closed(); c != "" {
			return nil, false, Ended("cancel", c)
		}
		return []Record{{Type: RunCancelled}}, false, nil
	})
}

// update appends to an existing run's journal the records decide returns
// for its current state, loading again and deciding anew when another
// writer appended first. When decide says again, it appends and decides
// once more (for records that must precede the operator's own).
func (j *Journal) update(ctx context.Context, runID, op string, decide func(st *state) (recs []Record, again bool, err error)) error {
	if err := ValidRunID(runID); err != nil {
		return err
	}
	for range maxConflicts {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, err := j.Store.Load(runID)
		if err != nil {
			return err
		}
		st := fold(recs)
		if !st.started {
			return fmt.Errorf("%w %q: no journal for it; see the runs with the list command", ErrUnknownRun, runID)
		}
		add, again, err := decide(st)
		if err != nil {
			return err
		}
		err = j.Store.Append(runID, len(recs), add...)
		if errors.Is(err, ErrConflict) || (err == nil && again) {
			continue
		}
		return err
	}
	return fmt.Errorf("%s %s: %w %d times", op, runID, ErrConflict, maxConflicts)
}

// check validates a signal against the run's state.
func (j *Journal) check(st *state, sig Signal) error {
	if c := st.closed(); c != "" {
		return Ended(sig.Name, c)
	}
	d := j.decide(st)
	if o := d.Outcome; o != nil && o.Status.Terminal() {
		return Ended(sig.Name, o.Status)
	}
	if sig.Execution != "" {
		return fmt.Errorf("%w %s: execution %q names a Temporal run; a local run has none; leave it out", ErrInvalid, sig.Name, agent.Clip(sig.Execution, 80))
	}
	if sig.Name == SignalBudget {
		turns, used := st.usage()
		_, err := RaiseBudget(sig, st.budget, turns, used)
		return err
	}
	if err := Validate(sig, d.Outcome, st.facts()); err != nil {
		return err
	}
	if ss := st.steps[sig.Step]; sig.Name == SignalReconcile && sig.Outcome == OutcomeRetry && ss != nil && ss.holder != nil && !ss.holder.Gone() {
		return CheckRetry(sig.Step, ss.holder.String(), ss.holder.Until(), j.now())
	}
	return nil
}

// Ended is the error every operator input gets once the run is in a
// terminal status: nothing changes a run after Completed, Failed or
// Cancelled.
func Ended(name string, s agent.Status) error {
	return fmt.Errorf("%w %s: the run is already %s; nothing changes a run after it ended", ErrInvalid, name, s)
}

// BudgetFormat says what a budget payload looks like, for error messages.
const BudgetFormat = `{"MaxTurns": 40, "MaxTokens": 200000} (0 or absent keeps a limit)`

// CheckBudget checks the shape of a budget: no negative limit, and at
// least one limit to set.
func CheckBudget(sig Signal) error {
	switch {
	case sig.MaxTurns < 0:
		return fmt.Errorf("%w budget: MaxTurns %d is negative; want a number of model calls, or 0 to keep the limit", ErrInvalid, sig.MaxTurns)
	case sig.MaxTokens < 0:
		return fmt.Errorf("%w budget: MaxTokens %d is negative; want a number of tokens, or 0 to keep the limit", ErrInvalid, sig.MaxTokens)
	case sig.MaxTurns == 0 && sig.MaxTokens == 0:
		return fmt.Errorf("%w budget: it sets no limit; want %s", ErrInvalid, BudgetFormat)
	}
	return nil
}

// RaiseBudget checks a budget against a run that made turns model calls
// and used u, and returns the run's new limits: each one set must be above
// what is used. cur is the run's budget now.
func RaiseBudget(sig Signal, cur agent.Budget, turns int, u agent.Usage) (agent.Budget, error) {
	if err := CheckBudget(sig); err != nil {
		return cur, err
	}
	if sig.MaxTurns != 0 && sig.MaxTurns <= turns {
		return cur, fmt.Errorf("%w budget: MaxTurns %d is not above the %d model calls the run made; want at least %d, or 0 to keep the limit (%d)", ErrInvalid, sig.MaxTurns, turns, turns+1, cur.WithDefaults().MaxTurns)
	}
	if sig.MaxTokens != 0 && sig.MaxTokens <= u.Total() {
		return cur, fmt.Errorf("%w budget: MaxTokens %d is not above the %d tokens the run used; want at least %d, or 0 to keep the limit", ErrInvalid, sig.MaxTokens, u.Total(), u.Total()+1)
	}
	return RaisedBudget(cur, sig), nil
}

// RaisedBudget is cur with the limits a budget signal sets.
func RaisedBudget(cur agent.Budget, sig Signal) agent.Budget {
	if sig.MaxTurns != 0 {
		cur.MaxTurns = sig.MaxTurns
	}
	if sig.MaxTokens != 0 {
		cur.MaxTokens = sig.MaxTokens
	}
	return cur
}

// Validate checks an operator's signal against where the run stands (o, nil
// while a step runs) and what is recorded (f). Both engines use it. The
// error wraps ErrInvalid and says what would be valid.
func Validate(sig Signal, o *agent.Outcome, f *agent.Facts) error {
	switch sig.Name {
	case SignalApprove, SignalDeny:
		if err := CheckDecision(sig); err != nil {
			return err
		}
		if a, decided := f.Decisions[sig.Marker]; decided {
			if !a.Approved && agent.IsExpired(a.Reason) {
				return fmt.Errorf("%w %s: marker %s was denied: %s", ErrInvalid, sig.Name, sig.Marker, a.Reason)
			}
			return fmt.Errorf("%w %s: marker %s was already decided", ErrInvalid, sig.Name, sig.Marker)
		}
		var pending []string
		if o != nil && o.Status == agent.StatusAwaitingApproval {
			for _, p := range o.Pending {
				if p.Marker == sig.Marker {
					if sig.Digest != "" && sig.Digest != p.Digest {
						return fmt.Errorf("%w %s", ErrInvalid, agent.DigestMismatch(sig.Name, sig.Marker, sig.Digest, p.Digest))
					}
					return nil
				}
				if _, decided := f.Decisions[p.Marker]; !decided {
					pending = append(pending, p.Marker)
				}
			}
		}
		return fmt.Errorf("%w %s: marker %s is not awaiting approval; pending: %s", ErrInvalid, sig.Name, sig.Marker, listOrNone(pending))
	case SignalReconcile:
		if err := CheckReconcile(sig); err != nil {
			return err
		}
		if !f.Indeterminate[sig.Step] {
			return fmt.Errorf("%w reconcile: step %s is not indeterminate; indeterminate: %s", ErrInvalid, sig.Step, listOrNone(sortedKeys(f.Indeterminate)))
		}
		return nil
	case SignalBudget:
		return CheckBudget(sig)
	case SignalMessage:
		if err := CheckMessage(sig); err != nil {
			return err
		}
		return CheckQueue(sig, f)
	}
	return fmt.Errorf("%w signal %q: want approve, deny, reconcile, budget or message", ErrInvalid, sig.Name)
}

// Apply records a validated signal in the facts: a decision, or a
// reconciliation (done records the person's result; retry clears the
// indeterminate mark so that the step runs once more).
func Apply(sig Signal, f *agent.Facts) {
	switch sig.Name {
	case SignalApprove:
		f.Decisions[sig.Marker] = agent.Approval{Approved: true}
	case SignalDeny:
		f.Decisions[sig.Marker] = agent.Approval{Reason: sig.Reason}
	case SignalReconcile:
		delete(f.Indeterminate, sig.Step)
		if sig.Outcome == OutcomeDone {
			f.Results[sig.Step] = agent.ReconciledResult(sig.Result)
		}
	}
}

// MaxMessageLen bounds a message's content, a deny's reason and a done
// result, in bytes: each is carried inline (in the run's state, a fact, the
// history) and read by the model.
const MaxMessageLen = 16 << 10

// Limits on the messages a run holds for model steps that have not run
// yet: they are carried in its state (and, on Temporal, its checkpoint)
// until a model step takes them.
const (
	MaxQueuedMessages     = 100
	MaxQueuedMessageBytes = 1 << 20
)

// CheckQueue checks that a message fits in the run's queue: the messages
// recorded (f) for model steps without a result, and this one, are at most
// MaxQueuedMessages and MaxQueuedMessageBytes.
func CheckQueue(sig Signal, f *agent.Facts) error {
	n, size := 0, 0
	for step, msgs := range f.Messages {
		if _, done := f.Results[step]; done {
			continue
		}
		for _, m := range msgs {
			n++
			size += len(m.Content)
		}
	}
	switch {
	case n+1 > MaxQueuedMessages:
		return fmt.Errorf("%w message: the run already holds %d messages for its next model step; at most %d wait at once: send it once the run has taken them", ErrInvalid, n, MaxQueuedMessages)
	case size+len(sig.Content) > MaxQueuedMessageBytes:
		return fmt.Errorf("%w message: the run already holds %d bytes of messages for its next model step, and this one has %d; at most %d bytes wait at once: send it once the run has taken them", ErrInvalid, size, len(sig.Content), MaxQueuedMessageBytes)
	}
	return nil
}

// MessageFormat says what a message payload looks like.
const MessageFormat = `{"Content": "also check the staging database"}`

// CheckMessage checks the shape of a message: some text, not too much.
func CheckMessage(sig Signal) error {
	switch {
	case strings.TrimSpace(sig.Content) == "":
		return fmt.Errorf("%w message: the content is empty; want some text, e.g. %s", ErrInvalid, MessageFormat)
	case len(sig.Content) > MaxMessageLen:
		return fmt.Errorf("%w message: the content is %d bytes; want at most %d", ErrInvalid, len(sig.Content), MaxMessageLen)
	}
	return nil
}

// maxExecution bounds an Execution (a Temporal run id is a 36-byte UUID).
const maxExecution = 128

// CheckDecision checks the shape of an approve or deny: a well-formed
// marker, a reason for a deny, and a well-formed Digest and Execution
// when given.
func CheckDecision(sig Signal) error {
	if !agent.IsToolStep(sig.Marker) {
		return fmt.Errorf("%w %s: marker %q is not a tool step; want %s", ErrInvalid, sig.Name, sig.Marker, agent.StepFormat)
	}
	if sig.Name == SignalDeny && strings.TrimSpace(sig.Reason) == "" {
		return fmt.Errorf("%w deny: the reason is empty; say why, the model reads it", ErrInvalid)
	}
	if sig.Name == SignalDeny && len(sig.Reason) > MaxMessageLen {
		return fmt.Errorf("%w deny: the reason is %d bytes; want at most %d (the model reads it, as a message)", ErrInvalid, len(sig.Reason), MaxMessageLen)
	}
	if sig.Digest != "" && !agent.ValidDigest(sig.Digest) {
		return fmt.Errorf("%w %s: digest %q is not an arguments digest; want %s, or none", ErrInvalid, sig.Name, agent.Clip(sig.Digest, 80), agent.DigestFormat)
	}
	if len(sig.Execution) > maxExecution {
		return fmt.Errorf("%w %s: execution is %d bytes; want the run id of the run's first execution (at most %d bytes), or none", ErrInvalid, sig.Name, len(sig.Execution), maxExecution)
	}
	return nil
}

// CheckReconcile checks the shape of a reconcile: a tool step, outcome
// done with a result, or retry without one.
func CheckReconcile(sig Signal) error {
	if !agent.IsToolStep(sig.Step) {
		return fmt.Errorf("%w reconcile: step %q is not a tool step; want %s", ErrInvalid, sig.Step, agent.StepFormat)
	}
	switch sig.Outcome {
	case OutcomeDone:
		if sig.Result == "" {
			return fmt.Errorf("%w reconcile: outcome done needs the result the step had (e.g. the ticket id)", ErrInvalid)
		}
		if len(sig.Result) > MaxMessageLen {
			return fmt.Errorf("%w reconcile: the done result is %d bytes; want at most %d (the model reads it, as a message)", ErrInvalid, len(sig.Result), MaxMessageLen)
		}
	case OutcomeRetry:
		if sig.Result != "" {
			return fmt.Errorf("%w reconcile: outcome retry takes no result; use done to give one", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w reconcile: outcome %q: want %q or %q", ErrInvalid, sig.Outcome, OutcomeDone, OutcomeRetry)
	}
	return nil
}

// StepInfo is one step of a run as Show reports it.
type StepInfo struct {
	Name   string     `json:"name"`
	Kind   agent.Kind `json:"kind"`
	State  string     `json:"state"` // "completed", "started" or "reconciled"
	Starts int        `json:"starts"`
	Result string     `json:"result,omitempty"`
	// Settled says how an interrupted write was settled without a person.
	Settled *agent.Settled `json:"settled,omitempty"`
}

// RunInfo is a run as Show reports it.
type RunInfo struct {
	RunID         string          `json:"run_id"`
	Status        agent.Status    `json:"status"`
	Pending       []agent.Pending `json:"pending,omitempty"`
	Indeterminate string          `json:"indeterminate,omitempty"`
	// Probe is what the Indeterminate write's probe answered, if it has one.
	Probe  *agent.ProbeAnswer `json:"probe,omitempty"`
	Answer string             `json:"answer,omitempty"`
	CutOff bool               `json:"cut_off,omitempty"` // the answer was cut off by the model's length limit
	Reason string             `json:"reason,omitempty"`
	// Budget is the run's limits; Turns and Usage what it used of them.
	Budget  agent.Budget `json:"budget"`
	Turns   int          `json:"turns"`
	Usage   agent.Usage  `json:"usage"`
	Steps   []StepInfo   `json:"steps"`
	Records int          `json:"records"`
}

// Show reports a run's status, what it waits for, and its steps in the
// order they first appear in a step.started or step.completed record. A
// step's Starts counts its step.started records: 0 for a model or read
// step, which is recorded only once it completed.
func (j *Journal) Show(runID string) (RunInfo, error) {
	if err := ValidRunID(runID); err != nil {
		return RunInfo{}, err
	}
	recs, err := j.Store.Load(runID)
	if err != nil {
		return RunInfo{}, err
	}
	st := fold(recs)
	if !st.started {
		return RunInfo{}, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", ErrUnknownRun, runID)
	}
	info := RunInfo{RunID: runID, Records: len(recs), Status: agent.StatusCompleted, Answer: st.answer, Budget: st.budget.WithDefaults()}
	info.Turns, info.Usage = st.usage()
	switch {
	case st.completed:
		info.CutOff = j.cutOff(st)
	case st.cancelled:
		o := st.cancelledOutcome()
		info.Status, info.Reason = o.Status, o.Reason
	default:
		d := j.decide(st)
		info.Status = agent.StatusRunning
		if o := d.Outcome; o != nil {
			info.Status, info.Pending, info.Indeterminate, info.Answer, info.Reason = o.Status, o.Pending, o.Step, o.Answer, o.Reason
			if ss := st.steps[o.Step]; ss != nil && o.Status == agent.StatusIndeterminate {
				info.Probe = ss.probed
				if ss.holder.Holds(j.now()) {
					// Its attempt may still act: a retry is refused until then.
					info.Reason = strings.TrimPrefix(info.Reason+"; "+ss.holder.MayRun()+"; a retry is refused until then", "; ")
				}
			}
			if o.Status == agent.StatusCompleted {
				info.Status = agent.StatusRunning // answered, not yet recorded: the next run records it
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Type != StepStarted && r.Type != StepCompleted || seen[r.Step] {
			continue
		}
		seen[r.Step] = true
		s := st.steps[r.Step]
		si := StepInfo{Name: r.Step, Kind: s.kind, Starts: s.starts, State: "started"}
		if s.completed {
			si.State, si.Result = "completed", agent.Summarize(s.result)
			if s.kind == agent.KindWrite {
				si.Settled = agent.SettledOf(s.result)
			}
		} else if s.reconcile != nil {
			si.State = "reconciled " + s.reconcile.Outcome
		}
		info.Steps = append(info.Steps, si)
	}
	return info, nil
}

// cutOff reports whether the final answer the recorded replies lead to was
// cut off by the model's length limit.
func (j *Journal) cutOff(st *state) bool {
	l := j.Loop
	l.FailOnCut = false
	o := l.Next(agent.Start(st.input), st.facts()).Outcome
	return o != nil && o.CutOff
}

// Waiting returns the runs that wait on a person: AwaitingApproval,
// Indeterminate or BudgetExceeded.
func (j *Journal) Waiting() ([]RunInfo, error) {
	ids, err := j.Store.List()
	if err != nil {
		return nil, err
	}
	var out []RunInfo
	for _, id := range ids {
		info, err := j.Show(id)
		if errors.Is(err, ErrUnknownRun) {
			continue
		}
		if err != nil {
			return nil, err
		}
		switch info.Status {
		case agent.StatusAwaitingApproval, agent.StatusIndeterminate, agent.StatusBudgetExceeded:
			out = append(out, info)
		}
	}
	return out, nil
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k, v := range m {
		if v {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// Reconcile settles an indeterminate write step: outcome "done" records
// result as the step's result (the tool never runs again), "retry" lets
// the step run once more. It is Signal with a reconcile payload.
func (j *Journal) Reconcile(ctx context.Context, runID, step, outcome, result string) error {
	return j.Signal(ctx, runID, Signal{Name: SignalReconcile, Step: step, Outcome: outcome, Result: result})
}
