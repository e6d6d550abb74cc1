package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
)

// waitKinds name the waits for a person in traces, by the run's status.
var waitKinds = map[agent.Status]string{
	agent.StatusAwaitingApproval: "approval",
	agent.StatusIndeterminate:    "indeterminate",
	agent.StatusBudgetExceeded:   "budget",
	agent.StatusIdle:             "session",
}

// waiting notes when the run began to wait for a person, for the trace
// (tracing.Wait); a wait that goes on after an answer keeps its start.
func (r *execution) waiting() {
	if r.waitBegan.IsZero() {
		r.waitBegan = workflow.Now(r.ctx)
	}
}

// traceAnswer records, in the run's trace, that a wait for a person was
// answered by sig, which came by (tracing.BySignal, ByUpdate, ByTimeout).
// Nothing while a step runs (an input that answers no wait), while the
// workflow replays, or with tracing off; no command either way.
func (r *execution) traceAnswer(sig operator.Signal, by string) {
	kind, ok := waitKinds[r.state.Status]
	if !ok || r.outcome == nil {
		return
	}
	step := sig.Marker
	if step == "" {
		step = sig.Step
	}
	outcome := sig.Name
	if sig.Name == operator.SignalReconcile && sig.Outcome != "" {
		outcome += " " + sig.Outcome
	}
	tracing.Wait(r.ctx, kind, outcome, by, step, r.waitBegan)
}
