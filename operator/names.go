package operator

import (
	"slices"

	"github.com/agentrun/agentrun/agent"
)

// Names of the operator's signals, which are also the names of the
// Temporal updates of the same operations.
const (
	SignalApprove   = "approve"
	SignalDeny      = "deny"
	SignalReconcile = "reconcile"
	SignalBudget    = "budget"
	SignalMessage   = "message"
)

// Signals returns the operator's signal names in their order: the order
// in which a Temporal run takes the signals of one workflow task.
func Signals() []string {
	return []string{SignalApprove, SignalDeny, SignalReconcile, SignalBudget, SignalMessage}
}

// IsSignal reports whether name is an operator signal.
func IsSignal(name string) bool { return slices.Contains(Signals(), name) }

// Reconcile outcomes.
const (
	OutcomeDone  = "done"
	OutcomeRetry = "retry"
)

// The search attributes (Keyword) a Temporal run keeps current: its
// agent.Status, and the step it waits on (the pending markers, or the
// Indeterminate step); and the run a fork goes on from (ForkOfAttribute,
// set when a fork starts: `AgentRunForkOf = "RUN"` lists RUN's forks). A
// cluster must have them registered.
const (
	StatusAttribute = "AgentRunStatus"
	StepAttribute   = "AgentRunStep"
	ForkOfAttribute = "AgentRunForkOf"
)

// WaitingStatuses are the statuses of a run that waits on a person, in the
// order the operator's list names them.
func WaitingStatuses() []agent.Status {
	return []agent.Status{agent.StatusAwaitingApproval, agent.StatusIndeterminate, agent.StatusBudgetExceeded}
}

// WaitsOnPerson reports whether a run in status s waits on a person:
// AwaitingApproval, Indeterminate or BudgetExceeded.
func WaitsOnPerson(s agent.Status) bool { return slices.Contains(WaitingStatuses(), s) }
