package codecserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentrun/agentrun/agent"
)

// envelopeRefs are the references of a decoded payload that /decode
// expands: only where agentrun's activities put them in their own results,
// which the worker seals. A payload whose whole value is
//
//   - a tool step's result (agent.ToolResult: "content" and no field of
//     another type): its "content_ref";
//   - a model step's result (agent.ModelReply: "message" from the
//     assistant and "usage"): its message's "content_ref" and each of its
//     tool calls' "args_ref".
//
// Nothing else is expanded, however it is shaped: not a workflow's start
// input or a checkpoint carried across continue-as-new, not a signal or
// an update (a child's report among them), not a query's answer, not an
// activity's input (built by the workflow from what it was told), not a
// payload nested in a value, not a reference anywhere deeper in a value.
// Those may hold what a caller wrote, and a caller who names another
// run's blob must not have it read for him. data is the payload's JSON, v
// its decoded value.
func envelopeRefs(data []byte, v any) []map[string]any {
	top, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := top["content"]; ok && strictly(data, new(agent.ToolResult)) {
		return refAt(top, "content_ref")
	}
	msg, ok := top["message"].(map[string]any)
	if _, usage := top["usage"]; !ok || !usage || msg["role"] != string(agent.RoleAssistant) || !strictly(data, new(agent.ModelReply)) {
		return nil
	}
	refs := refAt(msg, "content_ref")
	calls, _ := msg["tool_calls"].([]any)
	for _, c := range calls {
		if c, ok := c.(map[string]any); ok {
			refs = append(refs, refAt(c, "args_ref")...)
		}
	}
	return refs
}

// refAt is m's field f when it is a reference object (agent.Ref).
func refAt(m map[string]any, f string) []map[string]any {
	if ref, ok := m[f].(map[string]any); ok {
		if _, ok := ref["key"].(string); ok {
			return []map[string]any{ref}
		}
	}
	return nil
}

// strictly says whether data decodes into typ with no field typ does not
// have and nothing after it.
func strictly(data []byte, typ any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(typ) != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}
