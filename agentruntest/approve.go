package agentruntest

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// Decision is a person's answer to a call that awaits approval: approve
// it, or deny it with a reason the model reads.
type Decision struct {
	// Approve lets the call run; false denies it.
	Approve bool
	// Reason says why a call is denied. Default "": "denied by the test".
	Reason string
}

// Approve approves the call at marker (its step, e.g. "tool/2/0/refund":
// the second model call's first tool call) when the run asks.
func (e *Env) Approve(marker string) { e.decisions[marker] = Decision{Approve: true} }

// Deny denies the call at marker with reason when the run asks.
func (e *Env) Deny(marker, reason string) { e.decisions[marker] = Decision{Reason: reason} }

// Done settles the write at step (e.g. "tool/2/0/refund") when the run
// stops there as Indeterminate, as a person who checked the world and
// found its effect would: result is recorded as the step's result, and
// the tool is not run again.
func (e *Env) Done(step, result string) {
	e.settles[step] = operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeDone, Result: result}
}

// Retry settles the write at step when the run stops there as
// Indeterminate, as a person who found no effect would: it runs once more
// (after the fence of an attempt that may still be running).
func (e *Env) Retry(step string) {
	e.settles[step] = operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeRetry}
}

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

// poll watches the run and its child runs: it answers the calls awaiting
// approval that the test decided, and cancels a run that waits for
// nobody. A child run's calls are answered on the child: the parent shows
// them through a read the sdk's test environment cannot make.
func (e *Env) poll() {
	if e.env.IsWorkflowCompleted() {
		return
	}
	st, err := e.State()
	if err != nil {
		e.env.RegisterDelayedCallback(e.poll, firstWatch) // not queryable yet
		return
	}
	seen := []workflows.State{st}
	e.answerAll("", st)
	for _, id := range e.childRuns() {
		v, err := e.env.QueryWorkflowByID(id, workflows.QueryState)
		var cst workflows.State
		if err != nil || v.Get(&cst) != nil {
			continue // ended, or not started yet
		}
		seen = append(seen, cst)
		e.answerAll(id, cst)
	}
	enc, _ := json.Marshal(seen)
	gap := e.watch.next(string(enc))
	if gap == 0 {
		e.waiting = seen
		e.env.CancelWorkflow()
		return
	}
	e.env.RegisterDelayedCallback(e.poll, gap)
}

// answerAll answers the calls of run (the child run id, "" for the run
// itself) that await approval.
func (e *Env) answerAll(run string, st workflows.State) {
	if st.Status == agent.StatusIndeterminate {
		e.settle(run, st)
		return
	}
	if st.Status != agent.StatusAwaitingApproval {
		return
	}
	for _, p := range st.Pending {
		e.answer(run, p)
	}
}

// answer signals the test's decision on p of run, once; it does nothing
// when the test has none.
func (e *Env) answer(run string, p agent.Pending) {
	key := run + " " + p.Marker
	if e.asked[key] {
		return
	}
	d, ok := e.decisions[p.Marker]
	if !ok && e.decide == nil {
		return
	}
	if !ok {
		d = e.decide(p)
	}
	e.asked[key] = true
	name, payload := operator.SignalApprove, map[string]string{"Marker": p.Marker}
	if !d.Approve {
		name, payload["Reason"] = operator.SignalDeny, cmp.Or(d.Reason, "denied by the test")
	}
	if run == "" {
		e.env.SignalWorkflow(name, payload)
		return
	}
	_ = e.env.SignalWorkflowByID(run, name, payload) // a child that ended meanwhile needs none
}

// settle sends the test's settlement of run's Indeterminate step, once
// the step's fence has passed; it does nothing when the test has none.
func (e *Env) settle(run string, st workflows.State) {
	sig, ok := e.settles[st.Indeterminate]
	key := run + " reconcile " + st.Indeterminate
	if !ok || e.asked[key] {
		return
	}
	if f := st.Fence; f != nil && sig.Outcome == operator.OutcomeRetry && e.env.Now().Before(f.Until) {
		return // the next watch tries again
	}
	e.asked[key] = true
	payload := map[string]string{"Step": sig.Step, "Outcome": sig.Outcome, "Result": sig.Result}
	if run == "" {
		e.env.SignalWorkflow(sig.Name, payload)
		return
	}
	_ = e.env.SignalWorkflowByID(run, sig.Name, payload)
}
