package progress

import "github.com/agentrun/agentrun/agent"

// The topics of a run's stream (package streams: Temporal's Workflow
// Streams protocol, so any Workflow Streams client subscribes).
const (
	// TopicEvents carries an Event for every step started and completed,
	// every status change and every rejected operator input.
	TopicEvents = "events"
	// TopicTokens carries Tokens: a model step's text while the model
	// writes it, published by the activity in batches.
	TopicTokens = "tokens"
)

// The types of Event.
const (
	EventStepStarted   = "step.started"
	EventStepCompleted = "step.completed"
	EventStatus        = "status"   // the run's status changed
	EventRejected      = "rejected" // an operator input was refused
	// EventFenceWait: the run waits for an earlier attempt of a write that
	// may still be running (Reason says which and until when) before it
	// settles the write.
	EventFenceWait = "fence.wait"
	// EventStepRetrying: an attempt of a step failed and the server will
	// try again (Attempt is the next one, Reason says how the last failed
	// and when the next is due), or a later attempt started (Reason says
	// so).
	EventStepRetrying = "step.retrying"
	// EventStepWaiting: an attempt of a model step waits for its rate
	// limit's slot (Attempt is the attempt, Reason says which limit and
	// when the slot comes: "waiting for the openai rate limit, next slot
	// in 12 s"). It is no failure: the call goes when the slot comes.
	EventStepWaiting = "step.waiting"
)

// Event is one item of TopicEvents: small JSON for people and programs
// following a run.
type Event struct {
	Type   string       `json:"type"`
	Step   string       `json:"step,omitempty"`
	Kind   agent.Kind   `json:"kind,omitempty"`
	Status agent.Status `json:"status,omitempty"` // EventStatus: the new status
	// Preview is the start of a completed step's result, a Completed or
	// Idle run's answer, or a rejected input's payload, on one line.
	Preview string `json:"preview,omitempty"`
	// Pending are the markers an AwaitingApproval run waits on.
	Pending []string `json:"pending,omitempty"`
	// Reason says why: a rejected input's, an Indeterminate write's cause,
	// a Failed, Cancelled or BudgetExceeded run's reason.
	Reason string `json:"reason,omitempty"`
	// Attempt is the attempt of a model step whose reply was streamed
	// (step.completed): its Tokens are the reply's, those of other
	// attempts were not; on step.retrying, the attempt due or running.
	Attempt int `json:"attempt,omitempty"`
	// Settled says how an interrupted write was settled (step.completed).
	Settled *agent.Settled `json:"settled,omitempty"`
	// Child is the run id of the child run a step started (step.started
	// of an agent tool's call), or, on an event a subscriber of the whole
	// tree relays from a child run, the child's run id.
	Child string `json:"child,omitempty"`
	// Cost is the run's cost so far in US dollars (step.completed of a
	// model step whose model has a price), its children's included.
	Cost float64 `json:"cost,omitempty"`
}

// Token is one item of TopicTokens: a piece of a model step's text, from
// one attempt of the step. A retried step publishes again under its next
// attempt; the step.completed Event names the attempt whose reply was
// recorded.
type Token struct {
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	Text    string `json:"text"`
	// Child is set on a token a subscriber of the whole tree relays from
	// a child run: the child's run id.
	Child string `json:"child,omitempty"`
}
