package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// idleWait waits until a message changed the run (true) or r.idle passed
// since the answer with none (false).
//
// Under versionFewerActions the timer outlives the wait: a message wakes
// the run without cancelling it, and the next answer waits on the same
// timer. When it fires before
// that answer's idle time is up, a new timer runs the rest, so a session
// answering often starts a timer about once per idle period instead of
// once per turn. A timer that fires while a turn runs only wakes a
// workflow task. Before, a timer started at each answer and was cancelled
// by the message: a billable action per turn on Temporal Cloud.
func (r *execution) idleWait(seen int) (bool, error) {
	woken := func() bool { return r.inputs.changes != seen }
	if !r.fewerActions {
		return awaitFor(r.ctx, r.idle, r.idleSummary(), woken)
	}
	deadline := workflow.Now(r.ctx).Add(r.idle)
	for {
		if r.idleTimer == nil {
			r.idleTimer = timerFor(r.ctx, deadline.Sub(workflow.Now(r.ctx)), r.idleSummary())
		}
		timer := r.idleTimer
		if err := workflow.Await(r.ctx, func() bool { return woken() || timer.IsReady() }); err != nil {
			return false, err
		}
		if woken() {
			return true, nil
		}
		r.idleTimer = nil
		if err := timer.Get(r.ctx, nil); err != nil {
			return false, err
		}
		if !workflow.Now(r.ctx).Before(deadline) {
			return false, nil
		}
	}
}

// idleSummary is the idle timer's summary in the Web UI.
func (r *execution) idleSummary() string {
	return "session ends after " + r.idle.String() + " idle"
}
