package codecserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/streams"
)

// TestExpandsOnlyAgentrunEnvelopes: with keys set, /decode expands a
// reference only in a tool step's result and a model step's reply, the
// values agentrun's activities make. The same reference to another run's
// blob, sealed under the key in a child's report (a signal), a start
// input, a checkpoint, a step's input, a query's answer, a value of
// another shape or a payload nested in a value, comes back exactly as it
// was sealed, without the blob's text. (Every one of them was expanded.)
func TestExpandsOnlyAgentrunEnvelopes(t *testing.T) {
	srv, cdc, store := setup(t, "", 0)
	const secret = "another run's tool output, sealed in the content store"
	key, err := store.Put(t.Context(), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	ref := &agent.Ref{Key: key, Size: len(secret), Preview: "another"}
	refJSON := `{"key":"` + key + `"}`
	pending := []agent.Pending{{Marker: "tool/1/0/create_ticket", Tool: "create_ticket", ArgsRef: ref}}
	item, err := streams.EncodePayload(jsonPayload(t, agent.ToolResult{ContentRef: ref}))
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]any{
		"a child's report (signal agentrun-child)": map[string]any{"run": "victim.tool.1.0.helper", "status": "AwaitingApproval", "pending": pending},
		"a start input": map[string]any{"messages": []agent.Message{{Role: agent.RoleUser, ContentRef: ref}}},
		"a checkpoint":  map[string]any{"messages": nil, "continued": map[string]any{"checkpoint": agent.Checkpoint{Input: []agent.Message{{Role: agent.RoleTool, ContentRef: ref}}}}},
		"a model step's input": map[string]any{"step": agent.Step{Name: "llm/1", Kind: agent.KindModel,
			Model: &agent.ModelInput{New: []agent.Message{{Role: agent.RoleTool, ContentRef: ref}}}}},
		"a tool step's input": map[string]any{"step": agent.Step{Name: "tool/1/0/lookup", Kind: agent.KindRead,
			Call: &agent.ToolCall{ID: "c1", Name: "lookup", ArgsRef: ref}}},
		"a query's answer":                  map[string]any{"status": "AwaitingApproval", "pending": pending},
		"a reference deep in a value":       map[string]any{"note": map[string]any{"content_ref": ref}},
		"a list of tool results":            []agent.ToolResult{{ContentRef: ref}},
		"a tool result with another field":  map[string]any{"content": "", "content_ref": ref, "from": "me"},
		"a tool result without its content": map[string]any{"content_ref": ref},
		"a reply from the user":             agent.ModelReply{Message: agent.Message{Role: agent.RoleUser, ContentRef: ref}},
		"a reference under another case":    json.RawMessage(`{"content":"","Content_Ref":` + refJSON + `}`),
	}
	var names []string
	var plain []*commonpb.Payload
	for name, v := range forged {
		names = append(names, name)
		plain = append(plain, jsonPayload(t, v))
	}
	streamed := jsonPayload(t, map[string]any{"items": []any{map[string]any{"topic": "events", "data": item, "offset": 0}}})
	real := []*commonpb.Payload{
		jsonPayload(t, agent.ToolResult{ContentRef: ref}),
		jsonPayload(t, agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, ContentRef: ref,
			ToolCalls: []agent.ToolCall{{ID: "c1", Name: "lookup", ArgsRef: ref}}}}),
	}
	enc, err := cdc.Encode(append(append(plain, streamed), real...))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := post(t, srv.URL+"/decode", "", list(t, enc...))
	got := unlist(t, out)
	if code != http.StatusOK || len(got) != len(enc) {
		t.Fatalf("decode: %d %.300s", code, out)
	}
	for i, name := range names {
		if !bytes.Equal(got[i].Data, plain[i].Data) {
			t.Errorf("%s: decoded as %s, want it as it was sealed: %s", name, got[i].Data, plain[i].Data)
		}
	}
	if s := string(got[len(names)].Data); !strings.Contains(s, `"data":{"content":"","content_ref":`) || strings.Contains(s, secret) {
		t.Errorf("a stream item holding a tool result: decoded as %s, want the item shown and its reference not expanded", s)
	}
	if s := string(got[len(names)+1].Data); !strings.Contains(s, `"content":"`+secret+`"`) {
		t.Errorf("a tool step's result: decoded as %s, want its reference expanded", s)
	}
	if s := string(got[len(names)+2].Data); strings.Count(s, `"content":"`+secret+`"`) != 2 {
		t.Errorf("a model step's reply: decoded as %s, want its message's and its call's references expanded", s)
	}
}
