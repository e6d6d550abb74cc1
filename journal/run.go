package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
)

// Run starts the run runID with input, or resumes it when its journal
// already holds the same input, and drives the agent loop until the run
// completes or needs a person. Every step goes through RunStep, so a
// resumed run calls no model and no tool twice for one step. A Failed
// outcome is returned as an outcome, not an error; an error means the run
// could not go on (a store failure, a step that failed) and may be resumed.
// With a Retry policy, a model or read step that fails is tried again
// while the policy allows (OnRetry is told of each retry before the wait);
// when it does not, Run records why the run stops (run.stopped: the step,
// its attempts, how long they took, the last error) and returns a
// *StoppedError. A resumed run starts the step's attempts afresh.
// While it drives the run it holds the run's lock when the Store is a
// Locker: a run another process drives is a *BusyError, and nothing is
// written. Before every step it checks that it still holds the lock; a
// lost lock is a *LockLostError, and the step does not run.
func (j *Journal) Run(ctx context.Context, runID string, input []agent.Message, exec agent.Executor) (agent.Outcome, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return agent.Outcome{}, err
	}
	if len(input) == 0 {
		return agent.Outcome{}, fmt.Errorf("%w input: the prompt is empty; want at least one message", operator.ErrInvalid)
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
	var f *follower // the wait between steps, when Run follows the run
	if j.Follow {
		if m, ok := lock.(FollowMarker); ok {
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
		recs, err := j.Store.Load(runID)
		if err != nil {
			return agent.Outcome{}, err
		}
		st := fold(recs)
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
		att, timeout := fence.Attempt{Number: 1}.Here(), time.Duration(0)
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
		tries.begin(step.Name, j.now())
		failed := false // the step ran and returned an error (not the store)
		_, err = j.runAttempt(ctx, runID, step, att, timeout, func(ctx context.Context) (json.RawMessage, error) {
			ctx, stop := j.watchCancel(ctx, runID, len(recs), f.changes())
			defer stop()
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
		var ind *IndeterminateError
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

// attempts counts the failed attempts of the step Run runs.
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
func (j *Journal) retry(ctx context.Context, runID string, seen int, step agent.Step, tries *attempts, err error, changes <-chan struct{}) error {
	tries.failed++
	tries.last, tries.lastErr = j.now(), j.Retry.Text(err)
	wait, again := j.Retry.Next(step, tries.failed, err)
	if !again {
		stop := Stop{Step: step.Name, Attempts: tries.failed, Over: j.now().Sub(tries.first), Error: j.Retry.Text(err)}
		*tries = attempts{}
		stopped := &StoppedError{RunID: runID, Stop: stop, Err: err}
		if rerr := j.update(ctx, runID, "stop", func(*state) ([]Record, bool, error) {
			return []Record{{Type: RunStopped, Stopped: &stop, At: j.now()}}, false, nil
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

// interrupted records, when Run's context ended while it retried a failing
// step, that the run stopped there and why (run.stopped, Interrupted: the
// step, its failed attempts, the last error), so that show names them and
// says how to resume rather than "Running" with nothing behind it. It is
// best effort: a driver that is killed records nothing, and show then says
// only that no driver runs the run.
func (j *Journal) interrupted(ctx context.Context, runID string, tries *attempts) {
	if tries.failed == 0 || tries.step == "" {
		return
	}
	stop := Stop{Step: tries.step, Attempts: tries.failed, Over: tries.last.Sub(tries.first), Error: tries.lastErr, Interrupted: true}
	*tries = attempts{}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptBound)
	defer cancel()
	_ = j.update(ctx, runID, "stop", func(st *state) ([]Record, bool, error) {
		if st.completed || st.cancelled {
			return nil, false, errEnded // nothing to say: it ended
		}
		return []Record{{Type: RunStopped, Stopped: &stop, At: j.now()}}, false, nil
	})
}

// signalRecords returns the records of signals.
func signalRecords(sigs []operator.Signal) []Record {
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

// cancelPoll is how often a running step looks for a cancel when its
// driver does not follow the run (a following driver is woken by its
// Watch).
const cancelPoll = 250 * time.Millisecond

// watchCancel returns ctx, cancelled with errCancelled as soon as the run's
// journal (which held seen records) gets a run.cancelled record, and a
// function that stops watching and returns once it stopped. It looks at
// the journal when changes wakes it, or every cancelPoll when changes is
// nil.
func (j *Journal) watchCancel(ctx context.Context, runID string, seen int, changes <-chan struct{}) (context.Context, func()) {
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
				if r.Type == RunCancelled {
					cancel(errCancelled)
					return
				}
			}
		}
	}()
	// Stopping waits for the goroutine, so that it takes no more values
	// from changes (the follower's Watch) once the driver reads them again.
	return ctx, func() { close(done); <-exited; cancel(nil) }
}

// FollowMarker is a Lock that can tell others that its driver follows the
// run (Journal.Follow): a BusyError of a second driver says so (Follows),
// and reconcile's message --wait waits for the answer only then.
type FollowMarker interface {
	MarkFollowing()
}

// follows reports whether a following driver waits in status s rather
// than return: the statuses that wait for a person or, a session, for a
// message.
func follows(s agent.Status) bool {
	return s == agent.StatusIdle || operator.WaitsOnPerson(s)
}

// stopped is what Run returns when its context ended (err) between two
// looks at the run: a following driver whose run waits for a person or a
// message returns that wait in a *FollowStoppedError, as when its context
// ends during the wait itself (a wake-up can come just before the end);
// otherwise the outcome is empty and the error err.
func (j *Journal) stopped(runID string, f *follower, err error) (agent.Outcome, error) {
	if f == nil {
		return agent.Outcome{}, err
	}
	recs, lerr := j.Store.Load(runID)
	if lerr != nil {
		return agent.Outcome{}, err
	}
	st := fold(recs)
	if st.completed || st.cancelled {
		return agent.Outcome{}, err
	}
	if d := j.decide(st); d.Outcome != nil && follows(d.Outcome.Status) {
		return *d.Outcome, &FollowStoppedError{RunID: runID, Outcome: *d.Outcome, Err: err}
	}
	return agent.Outcome{}, err
}

// follower is the wait of a driver that follows its run.
type follower struct {
	j         *Journal
	runID     string
	watch     Watch
	announced string // the wait OnWait was told of last
}

// changes is the follower's wake-ups, nil when Run does not follow.
func (f *follower) changes() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.watch.C()
}

// wait tells OnWait of o when it is a new wait, then sleeps until the
// journal may have changed or until at (when not zero: an approval
// timeout, a session's idle time). ctx ending is a *FollowStoppedError.
func (f *follower) wait(ctx context.Context, o agent.Outcome, at time.Time) error {
	if key := waitKey(o); key != f.announced {
		f.announced = key
		if f.j.OnWait != nil {
			f.j.OnWait(o)
		}
	}
	var timer <-chan time.Time
	if !at.IsZero() {
		t := time.NewTimer(at.Sub(f.j.now())) // on the journal's clock, as the fold decides
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.watch.C():
	case <-timer:
	case <-ctx.Done():
		return &FollowStoppedError{RunID: f.runID, Outcome: o, Err: ctx.Err()}
	}
	return nil
}

// waitKey names a wait: its status and what it waits on.
func waitKey(o agent.Outcome) string {
	k := []string{string(o.Status), o.Step, o.Reason, o.Answer}
	for _, p := range o.Pending {
		k = append(k, p.Marker)
	}
	return strings.Join(k, "\x00")
}

// wakeAt is when a run waiting in o goes on without a person: the first
// approval timeout of its pending calls, or a session's idle time; zero
// when nothing but a record wakes it.
func (s *state) wakeAt(o agent.Outcome) time.Time {
	switch o.Status {
	case agent.StatusIdle:
		return s.idleUntil()
	case agent.StatusAwaitingApproval:
		var first time.Time
		for _, p := range o.Pending {
			if _, decided := s.ops.Facts.Decisions[p.Marker]; decided || p.Expires <= 0 {
				continue
			}
			n, _ := agent.StepTurn(p.Marker)
			model := s.steps[agent.ModelStep(n)]
			if model == nil || model.at.IsZero() {
				continue
			}
			if at := model.at.Add(p.Expires); first.IsZero() || at.Before(first) {
				first = at
			}
		}
		return first
	}
	return time.Time{}
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
				return fmt.Errorf("run %s: %w; resume it with the prompt it started with, or choose another run id", runID, operator.ErrInputMismatch)
			}
			return nil
		}
		limits := j.Limits.WithDefaults()
		err = j.Store.Append(runID, 0, Record{Type: RunStarted, Input: input, Budget: &limits, Session: j.Session})
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
// wrapping operator.ErrInvalid (or operator.ErrUnknownRun) that says what would be valid,
// and writes nothing.
func (j *Journal) Signal(ctx context.Context, runID string, sig operator.Signal) error {
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
			return nil, false, operator.Ended("cancel", c)
		}
		return []Record{{Type: RunCancelled}}, false, nil
	})
}

// update appends to an existing run's journal the records decide returns
// for its current state, loading again and deciding anew when another
// writer appended first. When decide says again, it appends and decides
// once more (for records that must precede the operator's own).
func (j *Journal) update(ctx context.Context, runID, op string, decide func(st *state) (recs []Record, again bool, err error)) error {
	if err := operator.ValidRunID(runID); err != nil {
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
			return fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
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

// check validates a signal against the run's state (operator.Check).
func (j *Journal) check(st *state, sig operator.Signal) error {
	d := j.decide(st)
	status := st.closed()
	if o := d.Outcome; status == "" && o != nil && o.Status.Terminal() {
		status = o.Status
	}
	turns, used := st.usage()
	s := operator.Stand{Local: true, Status: status, Outcome: d.Outcome, Facts: st.facts(), Budget: st.ops.Budget, Turns: turns, Usage: used, Now: j.now()}
	if ss := st.steps[sig.Step]; ss != nil && ss.holder != nil && !ss.holder.Gone() {
		s.Holder = &operator.Holder{Step: sig.Step, Attempt: ss.holder.String(), Until: ss.holder.Until()}
	}
	return operator.Check(sig, s)
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
	Empty  bool               `json:"empty,omitempty"`   // the answer has no text: the model returned nothing
	Reason string             `json:"reason,omitempty"`
	// Budget is the run's limits; Turns and Usage what it used of them.
	Budget  agent.Budget `json:"budget"`
	Turns   int          `json:"turns"`
	Usage   agent.Usage  `json:"usage"`
	Steps   []StepInfo   `json:"steps"`
	Records int          `json:"records"`
	// Stopped is why the last driver of a Running run stopped it (Run's
	// Retry gave up on a step): resume it with Run.
	Stopped *Stop `json:"stopped,omitempty"`
}

// Show reports a run's status, what it waits for, and its steps in the
// order they first appear in a step.started or step.completed record. A
// step's Starts counts its step.started records: 0 for a model or read
// step, which is recorded only once it completed.
func (j *Journal) Show(runID string) (RunInfo, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return RunInfo{}, err
	}
	recs, err := j.Store.Load(runID)
	if err != nil {
		return RunInfo{}, err
	}
	st := fold(recs)
	if !st.started {
		return RunInfo{}, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
	}
	info := RunInfo{RunID: runID, Records: len(recs), Status: agent.StatusCompleted, Answer: st.answer, Budget: st.ops.Budget.WithDefaults()}
	info.Turns, info.Usage = st.usage()
	switch {
	case st.completed:
		o := j.final(st)
		info.CutOff, info.Empty = o.CutOff, o.Empty
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
		if info.Status == agent.StatusRunning {
			info.Stopped = st.stopped
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

// final returns the outcome the recorded replies of a completed run lead
// to, for its flags: whether the final answer was cut off by the model's
// length limit (CutOff), whether it has no text (Empty).
func (j *Journal) final(st *state) agent.Outcome {
	l := j.Loop
	l.FailOnCut, l.FailOnEmpty = false, false
	if o := l.Next(agent.Start(st.input), st.facts()).Outcome; o != nil {
		return *o
	}
	return agent.Outcome{}
}

// Waiting returns the runs that wait on a person: AwaitingApproval,
// Indeterminate or BudgetExceeded, and Running runs whose driver stopped
// them (RunInfo.Stopped: someone must resume them).
func (j *Journal) Waiting() ([]RunInfo, error) {
	ids, err := j.Store.List()
	if err != nil {
		return nil, err
	}
	var out []RunInfo
	for _, id := range ids {
		info, err := j.Show(id)
		if errors.Is(err, operator.ErrUnknownRun) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if operator.WaitsOnPerson(info.Status) || info.Stopped != nil {
			out = append(out, info)
		}
	}
	return out, nil
}

// Reconcile settles an indeterminate write step: outcome "done" records
// result as the step's result (the tool never runs again), "retry" lets
// the step run once more. It is Signal with a reconcile payload.
func (j *Journal) Reconcile(ctx context.Context, runID, step, outcome, result string) error {
	return j.Signal(ctx, runID, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: outcome, Result: result})
}
