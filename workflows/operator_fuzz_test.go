package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/journal"
)

// FuzzDecodeOperator: decodeOperator never panics, whatever the name,
// encoding or bytes; what it refuses it refuses with an error that names
// the operation, and what it accepts is a signal of that operation that
// passes the journal's shape checks. The seeds run in every go test.
func FuzzDecodeOperator(f *testing.F) {
	seeds := []struct{ name, enc, data string }{
		{SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
		{SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket","Digest":"sha256:0123456789abcdef","Execution":"0b9c"}`},
		{SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket","Digest":"sha256:XYZ"}`},
		{SignalDeny, "json/plain", `{"Marker":"tool/2/0/create_ticket","Reason":"no","Digest":"sha256:0123456789abcdef"}`},
		{SignalDeny, "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
		{SignalReconcile, "json/plain", `{"Step":"tool/2/0/create_ticket","Outcome":"done","Result":"T-1"}`},
		{SignalReconcile, "json/plain", `{"Step":"tool/2/0/create_ticket","Outcome":"retry","Digest":"sha256:0123456789abcdef"}`},
		{SignalBudget, "json/plain", `{"MaxTurns":40,"MaxTokens":200000}`},
		{SignalBudget, "json/plain", `{"MaxTurns":1e400}`},
		{SignalMessage, "json/plain", `{"Content":"also check \u001b[2J staging"}`},
		{SignalMessage, "json/plain", `{"Content":"a"} {"Content":"b"}`},
		{SignalApprove, "binary/plain", `x`},
		{SignalApprove, "json/plain", ``},
		{SignalApprove, "json/plain", `null`},
		{"aprove", "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
	}
	for _, s := range seeds {
		f.Add(s.name, s.enc, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, name, enc string, data []byte) {
		raw := converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(enc)}, Data: data})
		sig, err := decodeOperator(name, raw)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, name) && !strings.Contains(msg, fmt.Sprintf("%q", name)) && !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("%s %q: refusal %q does not name the operation", name, data, err)
			}
			return
		}
		if sig.Name != name {
			t.Fatalf("%s %q: decoded as %q", name, data, sig.Name)
		}
		var check error
		switch name {
		case SignalApprove, SignalDeny:
			check = journal.CheckDecision(sig)
		case SignalReconcile:
			check = journal.CheckReconcile(sig)
		case SignalBudget:
			check = journal.CheckBudget(sig)
		case SignalMessage:
			check = journal.CheckMessage(sig)
		default:
			t.Fatalf("%s: an unknown operation was accepted", name)
		}
		if check != nil {
			t.Fatalf("%s %q: accepted, yet the journal refuses it: %v", name, data, check)
		}
		if (sig.Digest != "" || sig.Execution != "") && name != SignalApprove && name != SignalDeny {
			t.Fatalf("%s %q: a digest on an operation that takes none", name, data)
		}
	})
}
