package local

import (
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

// driveState is one state of Drive's loop: it does its part and returns
// the state that comes next, or nil when Drive returns (driver.out and
// driver.err). The states, and where each goes:
//
//	deciding        -> stopping | expiring | completing | waiting | preparing
//	expiring        -> deciding
//	completing      -> waiting | deciding
//	waiting         -> deciding
//	preparing       -> running | replaying
//	replaying       -> deciding
//	running         -> judging
//	judging         -> deciding | waitingOnChild | retrying | waitingOnFence | waiting | failing
//	retrying        -> deciding
//	waitingOnChild  -> deciding
//	waitingOnFence  -> deciding
//
// and any of them may end the loop instead; stopping and failing always
// do. Every way on leads back to deciding, which loads the journal afresh:
// no state acts on a look at the run older than its own round.
type driveState func(ctx context.Context) driveState

// driver is one call of Drive: the run it drives, what it holds while it
// drives it, and what one state hands the next.
type driver struct {
	j     *Engine
	runID string
	exec  agent.Executor
	lock  journal.Lock
	f     *follower // the wait between steps, when the engine follows the run
	tries attempts  // of the step that failed last, when Retry is set

	seen    int               // the records deciding saw
	st      *state            // their fold
	denials []operator.Signal // the approvals expired since (expiring)
	wait    agent.Outcome     // the outcome decided, or the Indeterminate step (waiting)
	step    agent.Step        // the step decided (preparing, running)
	stepErr error             // what the guard returned for it (judging)
	failed  bool              // the step ran and returned an error (not the store)
	child   *childWaitError   // the child run that waits for a person (waitingOnChild)
	until   time.Time         // when an earlier driver's attempt can no longer act (waitingOnFence)
	replay  *agent.Replay     // how a replay fork answers its calls, once read (replaying)

	out agent.Outcome // what Drive returns
	err error
}

// done is the end of the loop: Drive returns o and err.
func (r *driver) done(o agent.Outcome, err error) driveState {
	r.out, r.err = o, err
	return nil
}

// deciding looks at the run: it loads and folds the journal and decides
// what comes next. A completed or cancelled run ends the loop.
func (r *driver) deciding(ctx context.Context) driveState {
	if ctx.Err() != nil {
		return r.stopping
	}
	recs, st, err := r.j.load(r.runID)
	if err != nil {
		return r.done(agent.Outcome{}, err)
	}
	r.seen, r.st = len(recs), st
	if st.completed {
		o := r.j.final(st)
		return r.done(agent.Outcome{Status: agent.StatusCompleted, Answer: st.answer, CutOff: o.CutOff, Empty: o.Empty}, nil)
	}
	if st.cancelled {
		return r.done(st.cancelledOutcome(), nil)
	}
	d := r.j.decide(st)
	if r.denials = st.expired(d.Outcome, r.j.now()); len(r.denials) > 0 {
		return r.expiring
	}
	if d.Outcome != nil {
		r.wait = *d.Outcome
		if r.wait.Status == agent.StatusCompleted {
			return r.completing
		}
		return r.waiting
	}
	r.step = *d.Step
	return r.preparing
}

// stopping is a driver whose context ended between two looks at the run:
// it records why the run stopped when it was retrying a step
// (interrupted), and returns what stopped says.
func (r *driver) stopping(ctx context.Context) driveState {
	err := ctx.Err()
	r.j.interrupted(ctx, r.runID, &r.tries)
	return r.done(r.j.stopped(r.runID, r.f, err))
}

// expiring denies the calls nobody decided within their approval timeout
// (the model is told); a conflict means the journal moved on, and deciding
// looks again either way.
func (r *driver) expiring(context.Context) driveState {
	err := r.j.Store.Append(r.runID, r.seen, signalRecords(r.denials)...)
	if err != nil && !errors.Is(err, journal.ErrConflict) {
		return r.done(agent.Outcome{}, err)
	}
	return r.deciding
}

// completing records the final answer (run.completed); a conflict means
// the journal moved on, and deciding looks again.
func (r *driver) completing(context.Context) driveState {
	err := r.j.Store.Append(r.runID, r.seen, journal.Record{Type: journal.RunCompleted, Answer: r.wait.Answer})
	if errors.Is(err, journal.ErrConflict) {
		return r.deciding
	}
	if err != nil {
		return r.done(agent.Outcome{}, err)
	}
	return r.waiting
}

// waiting is a run in the outcome r.wait. Drive returns it, unless it
// follows the run and the run waits for a person or a message: then it
// sleeps until a record lands or the run's wake time (wakeAt: zero, for an
// Indeterminate step, waits for a record) and decides again.
func (r *driver) waiting(ctx context.Context) driveState {
	if r.f == nil || !follows(r.wait.Status) {
		return r.done(r.wait, nil)
	}
	if err := r.f.wait(ctx, r.wait, r.st.wakeAt(r.wait)); err != nil {
		return r.done(r.wait, err)
	}
	return r.deciding
}

// preparing makes the decided step ready to run: a settled write gets its
// idempotency key (the run, the step, and how often a person said retry),
// and the executor reads the values the step keeps by reference.
func (r *driver) preparing(ctx context.Context) driveState {
	if r.st.replay() && r.step.Call != nil {
		return r.replaying // a replay fork runs no tool (fork.go)
	}
	if r.step.Settle != nil {
		s := *r.step.Settle
		s.Key = agent.IdempotencyKey(r.runID, r.step.Name, r.generation())
		r.step.Settle = &s
	}
	if p, ok := r.exec.(preparer); ok {
		// Values kept by reference are read before a write's start is
		// recorded: a missing one must not look like a write that ran.
		step, err := p.Prepare(ctx, r.step)
		if err != nil {
			return r.done(agent.Outcome{}, fmt.Errorf("run %s: %w", r.runID, err))
		}
		r.step = step
	}
	return r.running
}

// generation is the generation of the decided step: one more than the
// times a person said retry.
func (r *driver) generation() int {
	gen := 1
	if ss := r.st.steps[r.step.Name]; ss != nil {
		gen += ss.Retries
	}
	return gen
}

// running runs the step under the write guard (journal.Guard.RunGated),
// once it has checked that the driver still holds the run's lock.
func (r *driver) running(ctx context.Context) driveState {
	// The lock may have gone while the last step ran (a PostgreSQL
	// lock goes with its connection): then another process may drive
	// the run now, and this one must not start a step beside it.
	if err := r.lock.Held(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return r.done(agent.Outcome{}, ctxErr)
		}
		return r.done(agent.Outcome{}, &journal.LockLostError{RunID: r.runID, Step: r.step.Name, Err: err})
	}
	att, timeout := fence.Attempt{Number: 1}.Here(), time.Duration(0)
	if t, ok := r.exec.(timeouter); ok && journal.NeedsStart(r.step) && r.step.Call != nil {
		// A write is fenced: a driver that lost its lock while it runs
		// the write (its PostgreSQL connection ended) holds it until
		// its deadline, and nobody else probes or runs it before then.
		att.Generation, timeout = r.generation(), t.Timeout(r.step.Call.Name)
	}
	gates := r.gates()
	r.tries.begin(r.step.Name, r.j.now())
	r.failed = false
	_, r.stepErr = r.j.guard().RunGated(ctx, r.runID, r.step, att, timeout, r.execute, gates)
	return r.judging
}

// gates gates the calls a model step's reply asks for, now, once: the
// journal keeps the decision with the reply. Other steps have none.
func (r *driver) gates() journal.GatesFunc {
	if r.step.Kind != agent.KindModel {
		return nil
	}
	n, _ := agent.StepTurn(r.step.Name)
	return func(res json.RawMessage) map[string]agent.Gate {
		reply, err := agent.DecodeModelReply(res)
		if err != nil {
			return nil // the loop reports the bad reply
		}
		return r.j.loopOf(r.st).Gates(n, reply.Message.ToolCalls)
	}
}

// execute is the step's work inside the guard: a call of an agent tool
// runs its child run, any other step the executor. A cancel recorded
// meanwhile ends its context.
func (r *driver) execute(ctx context.Context) (json.RawMessage, error) {
	ctx, stop := r.j.watchCancel(ctx, r.runID, r.seen, r.f.changes())
	defer stop()
	if r.j.agentCall(&r.step) != "" {
		return r.j.runChild(ctx, r.runID, r.st, r.step) // its errors are the child's: no retry here
	}
	if r.j.OnLimitWait != nil && r.step.Kind == agent.KindModel {
		runID, name := r.runID, r.step.Name
		ctx = ratelimit.WithWaits(ctx, func(w ratelimit.Wait) { r.j.OnLimitWait(LimitWait{RunID: runID, Step: name, Wait: w}) })
	}
	res, err := r.exec.Execute(ctx, r.step)
	r.failed = err != nil
	return res, err
}

// judging reads what the guard returned for the step (stepErr) and chooses
// what follows, in this order: a step that went through, or stopped
// because the run was cancelled, is decided again; a child waiting for a
// person, a step Retry may try again, a fenced write, an Indeterminate
// write and any other error each have their state.
func (r *driver) judging(ctx context.Context) driveState {
	err := r.stepErr
	if err == nil {
		r.tries = attempts{} // the step went through: no failed attempts to tell of
	}
	if err != nil && r.j.cancelled(r.runID) {
		return r.deciding // the step stopped because the run was cancelled: the next load says so
	}
	var fenced *fence.Error
	var ind *journal.IndeterminateError
	switch {
	case errors.As(err, &r.child):
		return r.waitingOnChild
	case r.failed && r.j.Retry != nil && ctx.Err() == nil && (r.step.Kind == agent.KindModel || r.step.Kind == agent.KindRead):
		return r.retrying
	case errors.As(err, &fenced):
		r.until = fenced.Until()
		return r.waitingOnFence
	case errors.As(err, &ind):
		r.wait = indeterminate(ind)
		return r.waiting
	case err != nil:
		return r.failing
	}
	return r.deciding
}

// indeterminate is the outcome of a write whose effect is unknown: its
// step, with what its probe answered and who may still run it, for the
// person.
func indeterminate(ind *journal.IndeterminateError) agent.Outcome {
	o := agent.Outcome{Status: agent.StatusIndeterminate, Step: ind.Step}
	if ind.Probe != nil {
		o.Reason = ind.Probe.String()
	}
	if ind.Holder != nil {
		o.Reason = strings.TrimPrefix(o.Reason+"; "+ind.Holder.MayRun(), "; ")
	}
	return o
}

// waitingOnChild is a run whose child run waits for a person: so does
// this run. Drive returns the child's outcome, unless it follows the run:
// then it sleeps until either journal changes or the child's wake time.
func (r *driver) waitingOnChild(ctx context.Context) driveState {
	if r.f == nil {
		return r.done(r.child.Outcome, nil)
	}
	if err := r.f.waitChild(ctx, r.child); err != nil {
		return r.done(r.child.Outcome, err)
	}
	return r.deciding
}

// retrying handles a failed model or read step (retry): it waits and
// decides again when Retry allows another attempt, and otherwise returns
// the *StoppedError, or ctx's error when the driver was stopped while it
// waited (then it records why, interrupted).
func (r *driver) retrying(ctx context.Context) driveState {
	if err := r.j.retry(ctx, r.runID, r.seen, r.step, &r.tries, r.stepErr, r.f.changes()); err != nil {
		if ctx.Err() != nil {
			r.j.interrupted(ctx, r.runID, &r.tries)
		}
		return r.done(agent.Outcome{}, err)
	}
	return r.deciding // the next load decides the step again: its next attempt
}

// waitingOnFence waits until an earlier driver's attempt of the write,
// fenced until r.until, can no longer act, then decides again.
func (r *driver) waitingOnFence(ctx context.Context) driveState {
	if err := sleepUntil(ctx, r.until); err != nil {
		return r.done(agent.Outcome{}, err)
	}
	return r.deciding
}

// failing ends Drive with the step's error; a driver stopped by its
// context while it retried the step records why (interrupted).
func (r *driver) failing(ctx context.Context) driveState {
	if ctx.Err() != nil {
		r.j.interrupted(ctx, r.runID, &r.tries)
	}
	return r.done(agent.Outcome{}, fmt.Errorf("run %s: step %s: %w", r.runID, r.step.Name, r.stepErr))
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
