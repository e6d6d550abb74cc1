package operator_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

// FuzzCheckSignal: the operator input checks never panic, and
// whatever they refuse is refused in one line wrapping ErrInvalid. The
// input is a signal record's JSON, as the local journal records and
// decodes it.
func FuzzCheckSignal(f *testing.F) {
	for _, s := range []string{
		`{"Name":"approve","Marker":"tool/2/0/create_ticket"}`,
		`{"Name":"approve","Marker":"tool/2/0/create_ticket","Digest":"sha256:0123456789abcdef"}`,
		`{"Name":"deny","Marker":"tool/2/0/create_ticket","Reason":"no","Digest":"sha256:zz","Execution":"x"}`,
		`{"Name":"reconcile","Step":"tool/2/0/create_ticket","Outcome":"done","Result":"T-1"}`,
		`{"Name":"reconcile","Step":"llm/1","Outcome":"retry","Result":"x"}`,
		`{"Name":"budget","MaxTurns":-1,"MaxTokens":9223372036854775807}`,
		`{"Name":"message","Content":"\u001b[2J hi"}`,
		`{"Name":"approve","Marker":"tool/2/0/create\nticket"}`,
		`{"Name":""}`,
	} {
		f.Add([]byte(s))
	}
	pending := &agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: hand.TicketStep, Tool: "create_ticket", Digest: "sha256:0123456789abcdef"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var sig operator.Signal
		if json.Unmarshal(data, &sig) != nil {
			return
		}
		facts := agent.NewFacts()
		facts.Indeterminate["tool/3/0/create_ticket"] = true
		checks := []error{operator.CheckLoop(sig, pending, facts), operator.CheckLoop(sig, nil, facts), operator.CheckShape(sig)}
		// The fields under each operation's shape check, whatever the name.
		for _, name := range operator.Signals() {
			as := sig
			as.Name = name
			checks = append(checks, operator.CheckShape(as))
		}
		for _, err := range checks {
			if err == nil {
				continue
			}
			if !errors.Is(err, operator.ErrInvalid) {
				t.Fatalf("%s: %v does not wrap ErrInvalid", data, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") && !strings.ContainsAny(sig.Marker+sig.Step+sig.Digest+sig.Execution, "\n") {
				t.Fatalf("%s: the refusal is not one line: %q", data, msg)
			}
		}
		if err := operator.CheckLoop(sig, pending, facts); err == nil && (sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny) &&
			(sig.Marker != hand.TicketStep || (sig.Digest != "" && sig.Digest != "sha256:0123456789abcdef")) {
			t.Fatalf("%s: accepted a decision on another marker or digest", data)
		}
	})
}
