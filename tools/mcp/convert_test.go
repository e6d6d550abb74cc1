package mcp

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIdempotencyKeyConvention: a write declares its idempotency key
// argument by name (idempotency_key, idempotencyKey) or by the
// x-idempotency-key keyword; a read, two candidates or a non-string
// idempotency_key declare nothing.
func TestIdempotencyKeyConvention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, schema string
		read         bool
		want         string
	}{
		{"by name", `{"type":"object","properties":{"title":{"type":"string"},"idempotency_key":{"type":"string"}}}`, false, "idempotency_key"},
		{"camel case", `{"type":"object","properties":{"idempotencyKey":{"type":"string"}}}`, false, "idempotencyKey"},
		{"by keyword", `{"type":"object","properties":{"request_id":{"type":"string","x-idempotency-key":true}}}`, false, "request_id"},
		{"on a read", `{"type":"object","properties":{"idempotency_key":{"type":"string"}}}`, true, ""},
		{"two candidates", `{"type":"object","properties":{"idempotency_key":{"type":"string"},"rid":{"x-idempotency-key":true}}}`, false, ""},
		{"not a string", `{"type":"object","properties":{"idempotency_key":{"type":"integer"}}}`, false, ""},
		{"none", `{"type":"object","properties":{"request_id":{"type":"string"}}}`, false, ""},
	} {
		var schema map[string]any
		if err := json.Unmarshal([]byte(c.schema), &schema); err != nil {
			t.Fatal(err)
		}
		tool := &sdk.Tool{Name: "w", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: c.read}}
		spec, err := toolSpec(tool)
		if err != nil {
			t.Fatal(err)
		}
		if spec.IdempotencyKey != c.want {
			t.Errorf("%s: key %q, want %q", c.name, spec.IdempotencyKey, c.want)
		}
	}
}
