package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/journal"
)

// payloadFormats says, per operation, what a valid payload looks like.
var payloadFormats = map[string]string{
	SignalApprove:   `{"Marker":"tool/2/0/create_ticket"}, optionally with "Digest":"sha256:0123456789abcdef" and "Execution":"<first run id>"`,
	SignalDeny:      `{"Marker":"tool/2/0/create_ticket","Reason":"..."}, optionally with "Digest" and "Execution"`,
	SignalReconcile: `{"Step":"tool/2/0/create_ticket","Outcome":"done","Result":"TICKET-7"} or {"Step":"...","Outcome":"retry"}`,
	SignalBudget:    `{"MaxTurns":40,"MaxTokens":200000} (0 or absent keeps a limit)`,
	SignalMessage:   `{"Content":"also check the staging database"}`,
}

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
	}
	messagePayload struct {
		Content string
	}
)

// decodeOperator decodes and checks the shape of an operator's payload.
// It never panics and does not look at the run's state.
func decodeOperator(name string, raw converter.RawValue) (journal.Signal, error) {
	want := payloadFormats[name]
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		return journal.Signal{}, fmt.Errorf("%s has no payload; want %s", name, want)
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return journal.Signal{}, fmt.Errorf("%s payload has encoding %q; want JSON like %s", name, enc, want)
	}
	var sig journal.Signal
	var err error
	switch name {
	case SignalApprove:
		var v approvePayload
		err = strictJSON(p.GetData(), &v)
		sig = journal.Signal{Name: name, Marker: v.Marker, Digest: v.Digest, Execution: v.Execution}
	case SignalDeny:
		var v denyPayload
		err = strictJSON(p.GetData(), &v)
		sig = journal.Signal{Name: name, Marker: v.Marker, Reason: v.Reason, Digest: v.Digest, Execution: v.Execution}
	case SignalReconcile:
		var v reconcilePayload
		err = strictJSON(p.GetData(), &v)
		sig = journal.Signal{Name: name, Step: v.Step, Outcome: v.Outcome, Result: v.Result}
	case SignalBudget:
		var v budgetPayload
		err = strictJSON(p.GetData(), &v)
		sig = journal.Signal{Name: name, MaxTurns: v.MaxTurns, MaxTokens: v.MaxTokens}
	case SignalMessage:
		var v messagePayload
		err = strictJSON(p.GetData(), &v)
		sig = journal.Signal{Name: name, Content: v.Content}
	default:
		return journal.Signal{}, fmt.Errorf("unknown operation %q; want %s", name, strings.Join(operatorSignals, ", "))
	}
	if err != nil {
		return journal.Signal{}, fmt.Errorf("%s payload %s: %v; want %s", name, clip(string(p.GetData()), 200), err, want)
	}
	switch name {
	case SignalReconcile:
		err = journal.CheckReconcile(sig)
	case SignalBudget:
		err = journal.CheckBudget(sig)
	case SignalMessage:
		err = journal.CheckMessage(sig)
	default:
		err = journal.CheckDecision(sig)
	}
	return sig, err
}

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
