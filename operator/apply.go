package operator

import "github.com/agentrun/agentrun/agent"

// Target is the part of a run that the operator's inputs change: each
// engine fills it from its own state and applies inputs to it.
type Target struct {
	// Facts are the loop's facts: the decisions, the reconciled results
	// and the messages for model steps are the operator's.
	Facts *agent.Facts
	// Budget is the run's limits.
	Budget agent.Budget
	// Turn and Models place a message: it goes to the model step after
	// the newest one started (Models), or after the current turn's first
	// (Turn) when that is newer (agent.NextModelStep).
	Turn, Models int
}

// Apply records an input that passed [Check] in the run, and returns the
// model step a message goes to ("" for other inputs):
//
//	approve    the marker's call is approved
//	deny       the marker's call is denied, with the reason the model reads
//	           (and Expired when its approval timed out)
//	reconcile  the step is no longer Indeterminate: done records the
//	           person's result as the step's, retry lets it run once more
//	budget     the limits it sets replace the run's (0 keeps one)
//	message    a user message for the next model step
func (r *Target) Apply(sig Signal) (messageStep string) {
	switch sig.Name {
	case SignalApprove:
		r.Facts.Decisions[sig.Marker] = agent.Approval{Approved: true}
	case SignalDeny:
		r.Facts.Decisions[sig.Marker] = agent.Approval{Reason: sig.Reason, Expired: sig.Expired}
	case SignalReconcile:
		delete(r.Facts.Indeterminate, sig.Step)
		if sig.Outcome == OutcomeDone {
			r.Facts.Results[sig.Step] = agent.ReconciledResult(sig.Result)
		}
	case SignalBudget:
		r.Budget = RaisedBudget(r.Budget, sig)
	case SignalMessage:
		messageStep = agent.NextModelStep(r.Turn, r.Models)
		r.Facts.AddMessage(messageStep, sig.Content)
	}
	return messageStep
}
