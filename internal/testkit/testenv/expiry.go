package testenv

import (
	"time"

	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
)

// The approval-expiry table both engines run (workflows and local tests):
// the model asks for lookup and create_ticket in one reply, so that the
// read runs before the gated call waits; the approval clock runs from the
// model step (operator.Expiry), not from that wait.
const (
	// ExpiryMarker is the table's gated call.
	ExpiryMarker = "tool/1/1/create_ticket"
	// ExpiryRead is the read that runs before it.
	ExpiryRead = "tool/1/0/lookup"
)

// ExpiryScript is the table's model: one reply asking for both calls,
// then an answer that passes on the ticket, or the denial.
func ExpiryScript() llm.Script {
	hand := llm.HandExample()
	both := llm.Turn{ToolCalls: append(append([]llm.ScriptedCall(nil), hand.Turns[0].ToolCalls...), hand.Turns[1].ToolCalls...)}
	return llm.Script{Turns: []llm.Turn{both, hand.Turns[2]}}
}

// ExpiryCase is one row: create_ticket's approval timeout, how long the
// read before it takes, what a person decides and when (times from the
// model step that asked), and what both engines must then show.
type ExpiryCase struct {
	Name      string
	Timeout   time.Duration // 0: never expires
	ReadTakes time.Duration
	Decide    string        // operator.SignalApprove, operator.SignalDeny, or "" (nobody)
	At        time.Duration // when the decision comes
	Reason    string        // a deny's
	Look      time.Duration // the run still waits then, nothing expired (0: no look)

	Expired    bool          // denied as expired: ExpiryMarker, the model told
	EndsAt     time.Duration // when it expired (Expired only)
	Tickets    int
	AnswerHas  string
	ModelCalls int
}

// Payload is the case's decision as a Temporal client sends it.
func (c ExpiryCase) Payload() any {
	if c.Decide == operator.SignalDeny {
		return operator.DenyPayload(ExpiryMarker, c.Reason)
	}
	return operator.ApprovePayload(ExpiryMarker)
}

// Signal is the case's decision as the local engine takes it.
func (c ExpiryCase) Signal() operator.Signal {
	return operator.Signal{Name: c.Decide, Marker: ExpiryMarker, Reason: c.Reason}
}

// ExpiryCases is the table.
func ExpiryCases() []ExpiryCase {
	expired := operator.ExpiredReason
	return []ExpiryCase{
		{Name: "nobody decides", Timeout: 30 * time.Minute, Look: 29 * time.Minute,
			Expired: true, EndsAt: 30 * time.Minute, AnswerHas: expired(30 * time.Minute), ModelCalls: 2},
		{Name: "a slow read first: the clock runs from the model step", Timeout: 30 * time.Minute, ReadTakes: 10 * time.Minute, Look: 29 * time.Minute,
			Expired: true, EndsAt: 30 * time.Minute, AnswerHas: expired(30 * time.Minute), ModelCalls: 2},
		{Name: "a short timeout", Timeout: time.Minute,
			Expired: true, EndsAt: time.Minute, AnswerHas: expired(time.Minute), ModelCalls: 2},
		{Name: "approved in time", Timeout: 30 * time.Minute, Decide: operator.SignalApprove, At: 29 * time.Minute,
			Tickets: 1, AnswerHas: "TICKET-1", ModelCalls: 2},
		{Name: "approved in time after a slow read", Timeout: 30 * time.Minute, ReadTakes: 10 * time.Minute, Decide: operator.SignalApprove, At: 29 * time.Minute,
			Tickets: 1, AnswerHas: "TICKET-1", ModelCalls: 2},
		{Name: "denied in time", Timeout: 30 * time.Minute, Decide: operator.SignalDeny, At: 10 * time.Minute, Reason: "not this quarter",
			AnswerHas: "denied by operator: not this quarter", ModelCalls: 2},
		{Name: "no timeout never expires", Decide: operator.SignalApprove, At: 100 * time.Hour, Look: 99 * time.Hour,
			Tickets: 1, AnswerHas: "TICKET-1", ModelCalls: 2},
	}
}
