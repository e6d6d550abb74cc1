package operator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/agent"
)

// formats says, per operation, what a valid payload looks like.
var formats = map[string]string{
	SignalApprove:   `{"Marker":"tool/2/0/create_ticket"}, optionally with "Digest":"sha256:0123456789abcdef" and "Execution":"<first run id>"`,
	SignalDeny:      `{"Marker":"tool/2/0/create_ticket","Reason":"..."}, optionally with "Digest" and "Execution"`,
	SignalReconcile: `{"Step":"tool/2/0/create_ticket","Outcome":"done","Result":"TICKET-7"} or {"Step":"...","Outcome":"retry"}`,
	SignalBudget:    `{"MaxTurns":40,"MaxTokens":200000,"MaxCost":5} (0 or absent keeps a limit; MaxCost in US dollars)`,
	SignalMessage:   `{"Content":"also check the staging database"}`,
}

// Format says what a valid payload of the operation name looks like; ""
// for a name that is no operation.
func Format(name string) string { return formats[name] }

// Payloads of the operator contract, one type per operation so that a
// field of another operation is refused as unknown.
type (
	approvePayload struct {
		Marker string
		// Digest and Execution, optional, pin the decision to the
		// arguments the operator saw and the run's first execution.
		Digest    string `json:",omitempty"`
		Execution string `json:",omitempty"`
	}
	denyPayload struct {
		Marker    string
		Reason    string
		Digest    string `json:",omitempty"`
		Execution string `json:",omitempty"`
	}
	reconcilePayload struct {
		Step    string
		Outcome string
		Result  string
	}
	budgetPayload struct {
		MaxTurns  int
		MaxTokens int64
		MaxCost   float64 `json:",omitempty"`
	}
	messagePayload struct {
		Content string
	}
)

// Decode decodes the JSON payload data of the operation name and checks
// its shape ([CheckShape]; the run's state is [Check]'s). It never panics.
// A refusal names the operation and what a valid payload looks like.
func Decode(name string, data []byte) (Signal, error) {
	var sig Signal
	var err error
	switch name {
	case SignalApprove:
		var v approvePayload
		err = strictJSON(data, &v)
		sig = Signal{Name: name, Marker: v.Marker, Digest: v.Digest, Execution: v.Execution}
	case SignalDeny:
		var v denyPayload
		err = strictJSON(data, &v)
		sig = Signal{Name: name, Marker: v.Marker, Reason: v.Reason, Digest: v.Digest, Execution: v.Execution}
	case SignalReconcile:
		var v reconcilePayload
		err = strictJSON(data, &v)
		sig = Signal{Name: name, Step: v.Step, Outcome: v.Outcome, Result: v.Result}
	case SignalBudget:
		var v budgetPayload
		err = strictJSON(data, &v)
		sig = Signal{Name: name, MaxTurns: v.MaxTurns, MaxTokens: v.MaxTokens, MaxCost: v.MaxCost}
	case SignalMessage:
		var v messagePayload
		err = strictJSON(data, &v)
		sig = Signal{Name: name, Content: v.Content}
	default:
		return Signal{}, fmt.Errorf("unknown operation %q; want %s", name, strings.Join(Signals(), ", "))
	}
	if err != nil {
		return Signal{}, fmt.Errorf("%s payload %s: %v; want %s", name, agent.Clip(string(data), 200), err, formats[name])
	}
	return sig, CheckShape(sig)
}

// strictJSON decodes one JSON value into v, refusing unknown fields.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// ApprovePayload is the payload of approve.
func ApprovePayload(marker string) any { return approvePayload{Marker: marker} }

// DenyPayload is the payload of deny.
func DenyPayload(marker, reason string) any { return denyPayload{Marker: marker, Reason: reason} }

// ApprovePayloadOf is the payload of approve pinned to the arguments with
// digest (agent.ArgsDigest) and to the run's first execution; "" leaves
// either out.
func ApprovePayloadOf(marker, digest, execution string) any {
	return approvePayload{Marker: marker, Digest: digest, Execution: execution}
}

// DenyPayloadOf is the payload of deny pinned like ApprovePayloadOf.
func DenyPayloadOf(marker, reason, digest, execution string) any {
	return denyPayload{Marker: marker, Reason: reason, Digest: digest, Execution: execution}
}

// DonePayload is the payload of a reconcile with outcome done.
func DonePayload(step, result string) any {
	return reconcilePayload{Step: step, Outcome: OutcomeDone, Result: result}
}

// RetryPayload is the payload of a reconcile with outcome retry.
func RetryPayload(step string) any {
	return struct{ Step, Outcome string }{step, OutcomeRetry}
}

// BudgetPayload is the payload of budget: the new limits b, 0 keeping one.
func BudgetPayload(b agent.Budget) any {
	return budgetPayload{MaxTurns: b.MaxTurns, MaxTokens: b.MaxTokens, MaxCost: b.MaxCost}
}

// RaiseHint is a budget that lets a run stopped by b go on: twice the
// limit that stopped it (tokens only when there is a token limit).
func RaiseHint(b agent.Budget, turns int, used agent.Usage) any {
	b = b.WithDefaults()
	hint := budgetPayload{MaxTurns: max(2*b.MaxTurns, turns+1)}
	if b.MaxTokens > 0 {
		hint.MaxTokens = max(2*b.MaxTokens, used.Total()+1)
	}
	if b.MaxCost > 0 {
		hint.MaxCost = max(2*b.MaxCost, used.Cost*2)
	}
	return hint
}

// MessagePayload is the payload of message.
func MessagePayload(content string) any { return messagePayload{Content: content} }

// PayloadOf is the payload that carries sig, pinned to the run's first
// execution when it is an approve or a deny and execution is not "".
func PayloadOf(sig Signal, execution string) any {
	switch sig.Name {
	case SignalApprove:
		return ApprovePayloadOf(sig.Marker, sig.Digest, execution)
	case SignalDeny:
		return DenyPayloadOf(sig.Marker, sig.Reason, sig.Digest, execution)
	case SignalBudget:
		return BudgetPayload(agent.Budget{MaxTurns: sig.MaxTurns, MaxTokens: sig.MaxTokens, MaxCost: sig.MaxCost})
	case SignalMessage:
		return MessagePayload(sig.Content)
	case SignalReconcile:
		if sig.Outcome == OutcomeDone {
			return DonePayload(sig.Step, sig.Result)
		}
	}
	return RetryPayload(sig.Step)
}
