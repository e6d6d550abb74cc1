package agentruntest

import (
	"encoding/json"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// Decision is a person's answer to a call that awaits approval: approve
// it, or deny it with a reason the model reads.
type Decision struct {
	Approve bool
	// Reason says why a call is denied. Default "": "denied by the test".
	Reason string
}

// Approve approves the call at marker (its step, e.g. "tool/2/0/refund":
// the second model call's first tool call) when the run asks.
func (e *Env) Approve(marker string) { e.decisions[marker] = Decision{Approve: true} }

// Deny denies the call at marker with reason when the run asks.
func (e *Env) Deny(marker, reason string) { e.decisions[marker] = Decision{Reason: reason} }

// OnApproval has decide answer every call awaiting approval that Approve
// and Deny did not name, once per call. decide runs on the environment's
// main loop, where it may call State.
func (e *Env) OnApproval(decide func(p agent.Pending) Decision) { e.decide = decide }

// The run is watched from the environment's main loop, never from an
// activity's goroutine: the sdk marks the workflow read-only during a
// query, and a query racing the main loop panics the workflow. A watch
// runs on a timer of the test's clock, which the environment skips
// forward whenever the workflow waits and no activity runs, so watching
// costs no wall time. The first comes after firstWatch; while the state
// stays the same the gap doubles, up to maxWatchGap, so the run's own
// timers (an approval timeout, a retry's backoff) fire first; a state
// unchanged across a gap of maxWatchGap means the run waits for a person
// the test did not answer.
const (
	firstWatch  = time.Second
	maxWatchGap = 24 * time.Hour
)

// watch is the state of the last watch and the gap to the next.
type watch struct {
	last string // the state, encoded
	gap  time.Duration
}

// next is the gap to the next watch after one that saw state; 0 when the
// state stayed the same across a gap of maxWatchGap.
func (w *watch) next(state string) time.Duration {
	switch {
	case w.gap == 0 || state != w.last:
		w.gap = firstWatch
	case w.gap >= maxWatchGap:
		return 0
	default:
		w.gap = min(2*w.gap, maxWatchGap)
	}
	w.last = state
	return w.gap
}

// poll watches the run: it answers the calls awaiting approval that the
// test decided, and cancels a run that waits for nobody.
func (e *Env) poll() {
	if e.env.IsWorkflowCompleted() {
		return
	}
	st, err := e.State()
	if err != nil {
		e.env.RegisterDelayedCallback(e.poll, firstWatch) // not queryable yet
		return
	}
	if st.Status == agent.StatusAwaitingApproval {
		for _, p := range st.Pending {
			e.answer(p)
		}
	}
	enc, _ := json.Marshal(st)
	gap := e.watch.next(string(enc))
	if gap == 0 {
		e.waiting = &st
		e.env.CancelWorkflow()
		return
	}
	e.env.RegisterDelayedCallback(e.poll, gap)
}

// answer signals the test's decision on p, once; it does nothing when the
// test has none.
func (e *Env) answer(p agent.Pending) {
	if e.asked[p.Marker] {
		return
	}
	d, ok := e.decisions[p.Marker]
	if !ok && e.decide == nil {
		return
	}
	if !ok {
		d = e.decide(p)
	}
	e.asked[p.Marker] = true
	if d.Approve {
		e.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": p.Marker})
		return
	}
	reason := d.Reason
	if reason == "" {
		reason = "denied by the test"
	}
	e.env.SignalWorkflow(operator.SignalDeny, map[string]string{"Marker": p.Marker, "Reason": reason})
}
