package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
)

// reached handles where the loop stands when it asks for no step: an
// answer completes the run (a session first waits Idle for a message), a
// failure fails it, and otherwise the run waits for a person (wait). nil
// means the loop goes on.
func (r *execution) reached(o *agent.Outcome, seen int) *ending {
	switch o.Status {
	case agent.StatusCompleted:
		return r.answered(o, seen)
	case agent.StatusFailed:
		return end(r.fail(o.Reason))
	}
	r.outcome = o
	r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Reason = o.Status, o.Pending, o.Step, o.Reason
	r.waiting()
	r.publish()
	r.inputs.acted = seen
	if err := r.wait(seen); err != nil {
		if r.ctx.Err() != nil {
			return end(r.cancelled())
		}
		if errors.Is(err, errContinue) {
			return end(Result{}, r.continueAsNew())
		}
		return end(Result{}, err)
	}
	return nil
}

// answered completes the run with the loop's answer o. A session waits
// Idle for a message first: one wakes the loop (nil), none completes it.
func (r *execution) answered(o *agent.Outcome, seen int) *ending {
	r.state.Status, r.state.Answer, r.state.CutOff, r.state.Empty = agent.StatusCompleted, o.Answer, o.CutOff, o.Empty
	r.state.AnswerTurn = r.turn.cp.Turn
	r.state.Pending, r.state.Indeterminate = nil, ""
	if r.in.Session {
		// A session waits for a message; with none it completes.
		r.outcome = o
		r.state.Status = agent.StatusIdle
		r.waiting()
		r.publish()
		r.inputs.acted = seen
		woke, err := r.idleWait(seen)
		if err != nil || r.ctx.Err() != nil {
			return end(r.cancelled())
		}
		if woke {
			return nil
		}
		tracing.Wait(r.ctx, waitKinds[agent.StatusIdle], string(agent.StatusCompleted), tracing.ByTimeout, "", r.waitBegan)
		r.state.Status = agent.StatusCompleted
	}
	r.publish()
	r.finishHandlers(true)
	return end(Result{Answer: o.Answer, Usage: r.state.Usage, Steps: r.state.StepCount, CutOff: o.CutOff, Empty: o.Empty, Turns: r.turnsUsed()}, nil)
}

// wait blocks until an operator input changed the run or, while calls with
// an approval timeout are pending, until the first of them expires, which
// denies it. The timer is Temporal's: it fires with no worker running.
//
// A run that waits long may take many inputs (and polls): when Temporal
// suggests continuing as new, or the stream served maxPolls polls, wait
// returns errContinue and the run continues as new from where it waits,
// carrying its facts, its pending calls' clocks and its stream.
func (r *execution) wait(seen int) error {
	parked := true // continue as new from here when it is due
	woke := func() bool { return r.inputs.changes != seen || (parked && r.mustContinue()) }
	r.startClocks()
	first := r.expiry().Next()
	for {
		ok, err := true, error(nil)
		if first.IsZero() {
			err = workflow.Await(r.ctx, woke)
		} else if left := first.Sub(workflow.Now(r.ctx)); left > 0 {
			ok, err = awaitFor(r.ctx, left, "approval timeout: deny the waiting call", woke)
		} else {
			ok = false
		}
		switch {
		case err != nil:
			return err
		case !ok:
			r.expire()
			return nil
		case r.inputs.changes != seen:
			return nil
		}
		// Woken to continue as new. Histories recorded before a wait could
		// continue as new replay as they were: they wait on.
		if r.v.of(r.ctx, versionParkedContinue) >= 1 {
			return errContinue
		}
		parked = false
	}
}

// startClocks starts the approval clock of each call newly pending with a
// timeout: at its model step's completion (operator.Expiry), or in runs
// recorded before that rule (versionExpiryClock) at this first wait.
func (r *execution) startClocks() {
	if r.outcome.Status != agent.StatusAwaitingApproval {
		return
	}
	for _, p := range r.outcome.Pending {
		if _, ok := r.turn.since[p.Marker]; ok || p.Expires <= 0 {
			continue
		}
		start := workflow.Now(r.ctx)
		if !r.turn.asked.IsZero() && r.v.of(r.ctx, versionExpiryClock) >= 1 {
			start = r.turn.asked
		}
		r.turn.since[p.Marker] = start
	}
}

// expiry is the run's approval clocks where it waits.
func (r *execution) expiry() operator.Expiry {
	return operator.Expiry{Outcome: r.outcome, Facts: r.turn.facts, Asked: func(m string) time.Time { return r.turn.since[m] }}
}

// expire denies every pending call whose approval timeout has passed.
func (r *execution) expire() {
	for _, p := range r.expiry().Expired(workflow.Now(r.ctx)) {
		sig := operator.ExpiredDeny(p)
		workflow.GetLogger(r.ctx).Info("approval expired", "step", p.Marker, "after", p.Expires.String())
		r.state.Expired = append(r.state.Expired, Expired{Marker: p.Marker, Tool: p.Tool, After: p.Expires.String()})
		r.traceAnswer(sig, tracing.ByTimeout)
		r.apply(sig)
	}
}

// fail ends the run as Failed.
func (r *execution) fail(reason string) (Result, error) {
	r.state.Status, r.state.Reason = agent.StatusFailed, reason
	r.state.Pending, r.state.Indeterminate = nil, ""
	r.publish()
	r.finishHandlers(true)
	// What it used goes with the failure: a parent run counts it.
	return Result{}, temporal.NewNonRetryableApplicationError(reason, ErrTypeFailed, nil, Result{Usage: r.state.Usage, Steps: r.state.StepCount, Turns: r.turnsUsed()})
}

// cancelled ends the run as Cancelled: the operator cancelled the
// workflow. A running model call or read was cancelled with it; a write
// that was running is named, as it may have taken effect.
func (r *execution) cancelled() (Result, error) {
	err := r.ctx.Err()
	r.ctx, _ = workflow.NewDisconnectedContext(r.ctx)
	r.state.Status, r.state.Pending, r.state.Indeterminate = agent.StatusCancelled, nil, ""
	r.state.Reason = agent.CancelledReason(r.state.InFlight)
	r.publish()
	r.closeStream(true)
	return Result{}, err
}

// finishHandlers lets handlers in flight finish before the run closes (completing)
// or continues as new: the stream's polls end (after a subscriber caught up
// with a completing run), updates waiting for the loop answer now.
func (r *execution) finishHandlers(completing bool) {
	r.closeStream(completing)
	r.inputs.closing = true
	_ = workflow.Await(r.ctx, func() bool { return workflow.AllHandlersFinished(r.ctx) })
}
