package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/operator"
)

// FuzzDecodeOperator: decodeOperator never panics, whatever the name,
// encoding or bytes; what it refuses it refuses with an error that names
// the operation, and what it accepts is a signal of that operation that
// passes the operator shape checks. The seeds run in every go test.
func FuzzDecodeOperator(f *testing.F) {
	seeds := []struct{ name, enc, data string }{
		{operator.SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
		{operator.SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket","Digest":"sha256:0123456789abcdef","Execution":"0b9c"}`},
		{operator.SignalApprove, "json/plain", `{"Marker":"tool/2/0/create_ticket","Digest":"sha256:XYZ"}`},
		{operator.SignalDeny, "json/plain", `{"Marker":"tool/2/0/create_ticket","Reason":"no","Digest":"sha256:0123456789abcdef"}`},
		{operator.SignalDeny, "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
		{operator.SignalReconcile, "json/plain", `{"Step":"tool/2/0/create_ticket","Outcome":"done","Result":"T-1"}`},
		{operator.SignalReconcile, "json/plain", `{"Step":"tool/2/0/create_ticket","Outcome":"retry","Digest":"sha256:0123456789abcdef"}`},
		{operator.SignalBudget, "json/plain", `{"MaxTurns":40,"MaxTokens":200000}`},
		{operator.SignalBudget, "json/plain", `{"MaxTurns":1e400}`},
		{operator.SignalMessage, "json/plain", `{"Content":"also check \u001b[2J staging"}`},
		{operator.SignalMessage, "json/plain", `{"Content":"a"} {"Content":"b"}`},
		{operator.SignalApprove, "binary/plain", `x`},
		{operator.SignalApprove, "json/plain", ``},
		{operator.SignalApprove, "json/plain", `null`},
		{"aprove", "json/plain", `{"Marker":"tool/2/0/create_ticket"}`},
	}
	for _, s := range seeds {
		f.Add(s.name, s.enc, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, name, enc string, data []byte) {
		raw := converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(enc)}, Data: data})
		sig, err := decodeOperator(name, raw)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, name) && !strings.Contains(msg, fmt.Sprintf("%q", name)) && !errors.Is(err, operator.ErrInvalid) {
				t.Fatalf("%s %q: refusal %q does not name the operation", name, data, err)
			}
			return
		}
		if sig.Name != name {
			t.Fatalf("%s %q: decoded as %q", name, data, sig.Name)
		}
		if !operator.IsSignal(name) {
			t.Fatalf("%s: an unknown operation was accepted", name)
		}
		if check := operator.CheckShape(sig); check != nil {
			t.Fatalf("%s %q: accepted, yet the operator checks refuse it: %v", name, data, check)
		}
		if (sig.Digest != "" || sig.Execution != "") && name != operator.SignalApprove && name != operator.SignalDeny {
			t.Fatalf("%s %q: a digest on an operation that takes none", name, data)
		}
	})
}
