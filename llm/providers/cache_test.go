package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

// anthropicBody is the part of a Messages request the prompt cache
// covers, each piece the exact bytes sent.
type anthropicBody struct {
	Tools    []json.RawMessage
	System   []json.RawMessage
	Messages []json.RawMessage
	blocks   [][]json.RawMessage // each message's content blocks
}

func parseAnthropicBody(t *testing.T, b []byte) anthropicBody {
	t.Helper()
	var body anthropicBody
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("request body: %v\n%s", err, b)
	}
	for i, m := range body.Messages {
		var msg struct{ Content []json.RawMessage }
		if err := json.Unmarshal(m, &msg); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		body.blocks = append(body.blocks, msg.Content)
	}
	return body
}

// breakpoints names the pieces of the body that carry cache_control, each
// of which must be {"type":"ephemeral"}.
func (b anthropicBody) breakpoints(t *testing.T) []string {
	t.Helper()
	var at []string
	check := func(name string, raw json.RawMessage) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cc, ok := fields["cache_control"]; ok {
			if string(cc) != `{"type":"ephemeral"}` {
				t.Errorf("%s: cache_control %s, want {\"type\":\"ephemeral\"}", name, cc)
			}
			at = append(at, name)
		}
	}
	for i, r := range b.Tools {
		check(fmt.Sprintf("tools[%d]", i), r)
	}
	for i, r := range b.System {
		check(fmt.Sprintf("system[%d]", i), r)
	}
	for i, blocks := range b.blocks {
		for j, r := range blocks {
			check(fmt.Sprintf("messages[%d].content[%d]", i, j), r)
		}
	}
	return at
}

// prefix is the bytes the cache reads up to and including message n-1:
// the tools, the system prompt and the first n messages, as sent.
func (b anthropicBody) prefix(n int) []byte {
	var out []byte
	for _, part := range [][]json.RawMessage{b.Tools, b.System, b.Messages[:n]} {
		for _, r := range part {
			out = append(out, r...)
			out = append(out, '\n')
		}
	}
	return out
}

// TestAnthropicCacheBreakpoints: over two consecutive turns of a
// conversation (the second request is the first, the model's answer and
// the tool results), each request marks at most four breakpoints, on the
// last tool, the last system block and the newest message's last block,
// and the second also where the first request's rolling breakpoint was;
// and everything the first request sent up to its rolling breakpoint, the
// tools and the system prompt included, is sent again byte for byte.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	first, second := readTestdata(t, "anthropic_tool_use.json"), readTestdata(t, "anthropic_cached.json")
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		body := first
		if n.Add(1) > 1 {
			body = second
		}
		answer(200, body)(w, r)
	})
	p := newTestAnthropic(t, f, AnthropicConfig{})
	tools := []agent.ToolSpec{
		{Name: "lookup", Description: "Look up an access policy.", Kind: agent.KindRead,
			Schema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","maxLength":200},"scope":{"type":"string","enum":["read","write"]}},"required":["topic"],"additionalProperties":false}`)},
		{Name: "create_ticket", Description: "File a ticket.", Kind: agent.KindWrite,
			Schema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"priority":{"type":"integer","minimum":1,"maximum":3}},"required":["title"]}`)},
	}
	conv := []agent.Message{
		{Role: agent.RoleSystem, Content: "You file access requests."},
		{Role: agent.RoleUser, Content: hand.Prompt},
	}
	reply, err := p.Complete(t.Context(), agent.ModelRequest{Messages: conv, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Message.ToolCalls) != 2 {
		t.Fatalf("the first answer has %d tool calls, want the recording's 2", len(reply.Message.ToolCalls))
	}
	conv = append(conv, reply.Message)
	for _, c := range reply.Message.ToolCalls {
		conv = append(conv, agent.Message{Role: agent.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "done: " + c.Name})
	}
	reply, err = p.Complete(t.Context(), agent.ModelRequest{Messages: conv, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if want := (agent.Usage{InputTokens: 22 + 268 + 1805, OutputTokens: 503, CacheReadTokens: 1805, CacheWriteTokens: 268}); reply.Usage != want {
		t.Errorf("second usage %+v, want %+v", reply.Usage, want)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d requests, want 2", len(reqs))
	}
	one, two := parseAnthropicBody(t, reqs[0].Body), parseAnthropicBody(t, reqs[1].Body)
	for i, tc := range []struct {
		body anthropicBody
		raw  []byte
		want []string
	}{
		{one, reqs[0].Body, []string{"tools[1]", "system[0]", "messages[0].content[0]"}},
		// the user prompt, then the assistant's text and two tool_use
		// blocks, then the two tool results in one user message
		{two, reqs[1].Body, []string{"tools[1]", "system[0]", "messages[0].content[0]", "messages[2].content[1]"}},
	} {
		got := tc.body.breakpoints(t)
		if !slices.Equal(got, tc.want) {
			t.Errorf("request %d: breakpoints at %q, want %q", i+1, got, tc.want)
		}
		// none hidden elsewhere (in a tool result's content, say), and
		// no more than the API takes
		if c := bytes.Count(tc.raw, []byte(`"cache_control"`)); c != len(got) || c > 4 {
			t.Errorf("request %d: %d cache_control fields, want the %d breakpoints found and at most 4", i+1, c, len(got))
		}
	}
	// The first request's rolling breakpoint is on its last message,
	// messages[0]; the second reads up to there from the cache.
	if a, b := one.prefix(len(one.Messages)), two.prefix(len(one.Messages)); !bytes.Equal(a, b) {
		t.Errorf("the second request's prefix differs from the first request\nfirst:\n%s\nsecond:\n%s", a, b)
	}
}

// TestAnthropicToolsSentAlike: a tool's schema is sent as the same bytes
// every time (the SDK appends a param's extra fields in map order, which
// would reorder a schema's keys from one request to the next and so miss
// the cache at the tools, the start of the prompt).
func TestAnthropicToolsSentAlike(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "anthropic_text.json")))
	p := newTestAnthropic(t, f, AnthropicConfig{})
	req := agent.ModelRequest{Messages: userOnly.Messages, Tools: []agent.ToolSpec{{Name: "lookup",
		Schema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"],"additionalProperties":false,"$defs":{},"title":"Lookup","description":"d","minProperties":1}`)}}}
	for range 20 {
		if _, err := p.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	want := parseAnthropicBody(t, reqs[0].Body).Tools
	for i, r := range reqs[1:] {
		if got := parseAnthropicBody(t, r.Body).Tools; !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("request %d sent the tools as\n%s\nthe first as\n%s", i+2, got, want)
		}
	}
	var tool struct {
		InputSchema map[string]any `json:"input_schema"`
	}
	if err := json.Unmarshal(want[0], &tool); err != nil || tool.InputSchema["type"] != "object" || len(tool.InputSchema) != 8 {
		t.Fatalf("input_schema %v (%v): want the schema's 8 fields, type object", tool.InputSchema, err)
	}
}

// TestOpenAIToolsSentAlike: the same for OpenAI, whose prompt cache also
// reads a prefix of the prompt.
func TestOpenAIToolsSentAlike(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "openai_text.json")))
	p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
	req := agent.ModelRequest{Messages: userOnly.Messages, Tools: []agent.ToolSpec{{Name: "lookup",
		Schema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"],"additionalProperties":false,"$defs":{},"title":"Lookup","description":"d","minProperties":1}`)}}}
	for range 20 {
		if _, err := p.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	tools := func(b []byte) string {
		var body struct{ Tools json.RawMessage }
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		return string(body.Tools)
	}
	reqs := f.requests()
	for i, r := range reqs[1:] {
		if got, want := tools(r.Body), tools(reqs[0].Body); got != want {
			t.Fatalf("request %d sent the tools as\n%s\nthe first as\n%s", i+2, got, want)
		}
	}
}
