package providers

import (
	"github.com/agentrun/agentrun/llm"

	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

func newTestAnthropic(t *testing.T, f *fake, cfg AnthropicConfig) *Anthropic {
	t.Helper()
	cfg.BaseURL = f.URL
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	p, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnthropicTextReply(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "anthropic_text.json")))
	p := newTestAnthropic(t, f, AnthropicConfig{})

	got, err := p.Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	assertReply(t, got, agent.ModelReply{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: "Your request is filed as TICKET-7. The data owner will review it."},
		FinishReason: agent.FinishStop,
		Usage:        agent.Usage{InputTokens: 2095, OutputTokens: 503},
		Model:        "anthropic:claude-sonnet-4-5",
		Settings:     &agent.ModelSettings{MaxTokens: 4096},
	})
	r := f.only(t)
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	// This SDK version sends the key as a bearer token.
	if got, want := r.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization %q, want %q", got, want)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	// The system prompt goes to the system parameter, not into messages.
	assertJSON(t, r.Body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 4096,
		"system": [{"type": "text", "text": "You file access requests.", "cache_control": {"type": "ephemeral"}}],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "`+hand.Prompt+`", "cache_control": {"type": "ephemeral"}}]}
		]
	}`)
}

func TestAnthropicToolUse(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "anthropic_tool_use.json")))
	p := newTestAnthropic(t, f, AnthropicConfig{MaxTokens: 1000})

	req := agent.ModelRequest{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "You file access requests."},
			{Role: agent.RoleUser, Content: hand.Prompt},
			{Role: agent.RoleAssistant, Content: "Looking it up.", ToolCalls: []agent.ToolCall{
				{ID: "toolu_1", Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)},
				{ID: "toolu_2", Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access"}`)},
			}},
			{Role: agent.RoleTool, ToolCallID: "toolu_1", Name: "lookup", Content: "Access needs a ticket approved by the data owner."},
			{Role: agent.RoleTool, ToolCallID: "toolu_2", Name: "create_ticket", Content: "denied: not during the freeze", IsError: true},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "toolu_3", Name: "now"}}},
			{Role: agent.RoleTool, ToolCallID: "toolu_3", Name: "now"}, // an empty result
			{Role: agent.RoleSystem, Content: "Answer in one sentence."},
			{Role: agent.RoleUser, Content: "Also, hurry."},
		},
		Tools: []agent.ToolSpec{
			{Name: "lookup", Description: "Look up an access policy.", Kind: agent.KindRead,
				Schema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","maxLength":200}},"required":["topic"],"additionalProperties":false}`)},
			{Name: "now", Kind: agent.KindRead}, // no schema: no arguments
		},
	}
	got, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	assertReply(t, got, agent.ModelReply{
		Message: agent.Message{Role: agent.RoleAssistant, Content: "I'll look up the access policy and file the ticket.", ToolCalls: []agent.ToolCall{
			{ID: "toolu_01A09q90qw90lq917835lq9", Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)},
			{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access to the orders database","priority":2}`)},
		}},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{InputTokens: 472, OutputTokens: 134},
		Model:        "anthropic:claude-sonnet-4-5",
		Settings:     &agent.ModelSettings{MaxTokens: 1000},
	})
	// Consecutive tool results share one user message, is_error is
	// carried, an empty result has no content block, and a user message
	// after tool results joins them. The last tool, the last system block,
	// the last block of the newest message and that of the message before
	// the newest assistant one are the cache's breakpoints.
	assertJSON(t, f.only(t).Body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 1000,
		"system": [
			{"type": "text", "text": "You file access requests."},
			{"type": "text", "text": "Answer in one sentence.", "cache_control": {"type": "ephemeral"}}
		],
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "`+hand.Prompt+`"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Looking it up."},
				{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"topic": "database access"}},
				{"type": "tool_use", "id": "toolu_2", "name": "create_ticket", "input": {"title": "Read access"}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "Access needs a ticket approved by the data owner."}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [{"type": "text", "text": "denied: not during the freeze"}], "cache_control": {"type": "ephemeral"}}
			]},
			{"role": "assistant", "content": [
				{"type": "tool_use", "id": "toolu_3", "name": "now", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_3"},
				{"type": "text", "text": "Also, hurry.", "cache_control": {"type": "ephemeral"}}
			]}
		],
		"tools": [
			{"name": "lookup", "description": "Look up an access policy.",
			 "input_schema": {"type": "object", "properties": {"topic": {"type": "string", "maxLength": 200}}, "required": ["topic"], "additionalProperties": false}},
			{"name": "now", "input_schema": {"type": "object", "properties": {}}, "cache_control": {"type": "ephemeral"}}
		]
	}`)
}

func TestAnthropicFinishReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ wire, want string }{
		{"end_turn", agent.FinishStop},
		{"tool_use", agent.FinishToolCalls},
		{"max_tokens", agent.FinishLength},
		{"stop_sequence", "stop_sequence"}, // passed through
		{"refusal", "refusal"},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			t.Parallel()
			body := strings.Replace(readTestdata(t, "anthropic_text.json"), `"stop_reason": "end_turn"`, `"stop_reason": "`+tc.wire+`"`, 1)
			f := newFake(t, answer(200, body))
			got, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
			if err != nil {
				t.Fatal(err)
			}
			if got.FinishReason != tc.want {
				t.Errorf("finish reason %q, want %q", got.FinishReason, tc.want)
			}
		})
	}
}

func TestAnthropicUsageCountsCachedTokens(t *testing.T) {
	t.Parallel()
	body := strings.NewReplacer(`"cache_creation_input_tokens": 0`, `"cache_creation_input_tokens": 100`,
		`"cache_read_input_tokens": 0`, `"cache_read_input_tokens": 1000`).Replace(readTestdata(t, "anthropic_text.json"))
	f := newFake(t, answer(200, body))
	got, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	if want := (agent.Usage{InputTokens: 2095 + 100 + 1000, OutputTokens: 503, CacheReadTokens: 1000, CacheWriteTokens: 100}); got.Usage != want {
		t.Errorf("usage %+v, want %+v", got.Usage, want)
	}
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	runErrorCases(t, anthropicErrorCases(), func(t *testing.T, f *fake) error {
		_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
		return err
	})
}

// anthropicErrorCases are error answers of the Messages API, for Complete
// and Stream alike.
func anthropicErrorCases() []errorCase {
	body := func(typ, msg string) string {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
		return string(b)
	}
	return []errorCase{
		{name: "429", status: 429, header: []string{"Retry-After", "7"},
			body: body("rate_limit_error", "This request would exceed the rate limit for your organization of 50,000 input tokens per minute."),
			want: llm.Error{Class: llm.ClassRateLimit, StatusCode: 429, RetryAfter: 7 * time.Second, Message: "This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}},
		{name: "500", status: 500, body: body("api_error", "Internal server error"),
			want: llm.Error{Class: llm.ClassServer, StatusCode: 500, Message: "Internal server error"}},
		{name: "529 overloaded", status: 529, body: body("overloaded_error", "Overloaded"),
			want: llm.Error{Class: llm.ClassServer, StatusCode: 529, Message: "Overloaded"}},
		{name: "503", status: 503, body: body("api_error", "Service unavailable"),
			want: llm.Error{Class: llm.ClassServer, StatusCode: 503, Message: "Service unavailable"}},
		{name: "400", status: 400, body: body("invalid_request_error", "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."),
			want: llm.Error{Class: llm.ClassBadRequest, StatusCode: 400, Message: "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."}},
		{name: "400 prompt too long", status: 400, body: body("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
			want: llm.Error{Class: llm.ClassContextLength, StatusCode: 400, Message: "the conversation is longer than the model's context window: prompt is too long: 208310 tokens > 200000 maximum"}},
		{name: "401", status: 401, body: body("authentication_error", "invalid x-api-key"),
			want: llm.Error{Class: llm.ClassAuth, StatusCode: 401, Message: "invalid x-api-key"}},
		{name: "403", status: 403, body: body("permission_error", "Your API key does not have permission to use the specified resource."),
			want: llm.Error{Class: llm.ClassAuth, StatusCode: 403, Message: "Your API key does not have permission to use the specified resource."}},
		{name: "404", status: 404, body: body("not_found_error", "model: claude-nonexistent-1"),
			want: llm.Error{Class: llm.ClassNotFound, StatusCode: 404, Message: "model: claude-nonexistent-1"}},
		{name: "413", status: 413, body: body("request_too_large", "Request exceeds the maximum allowed number of bytes."),
			want: llm.Error{Class: llm.ClassBadRequest, StatusCode: 413, Message: "Request exceeds the maximum allowed number of bytes."}},
	}
}

func TestAnthropicClosedConnection(t *testing.T) {
	t.Parallel()
	f := newFake(t, hangUp)
	_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
	if e := asError(t, err); e.Class != llm.ClassNetwork || e.StatusCode != 0 {
		t.Errorf("error %#v, want class %s without status", *e, llm.ClassNetwork)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("server got %d requests, want exactly 1", n)
	}
}

func TestAnthropicBrokenAnswers(t *testing.T) {
	t.Parallel()
	t.Run("not JSON", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, answer(200, `{"id": "msg_1", "content": [`))
		_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassServer || e.StatusCode != 200 {
			t.Errorf("error %#v, want class %s with status 200", *e, llm.ClassServer)
		}
	})
	t.Run("body cut short", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, cutShort(readTestdata(t, "anthropic_text.json")))
		_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassNetwork {
			t.Errorf("error %#v, want class %s", *e, llm.ClassNetwork)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("server got %d requests, want exactly 1", n)
		}
	})
}

func TestAnthropicKeyNeverShown(t *testing.T) {
	t.Parallel()
	for _, status := range []int{401, 400, 529} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				seen := fmt.Sprintf("authorization=%q x-api-key=%q", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
				b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": "invalid credentials: " + seen}})
				answer(status, string(b))(w, r)
			})
			_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
			if err == nil {
				t.Fatal("no error")
			}
			if s := fmt.Sprintf("%v %+v %#v %s", err, err, err, asError(t, err).Message); strings.Contains(s, testKey) {
				t.Fatalf("the error shows the key: %s", s)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error %q: want the echoed header, scrubbed", err)
			}
		})
	}
	t.Run("plain text body", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "upstream rejected headers: "+r.Header.Get("Authorization"))
		})
		_, err := newTestAnthropic(t, f, AnthropicConfig{}).Complete(t.Context(), userOnly)
		if e := asError(t, err); *e != (llm.Error{Class: llm.ClassServer, StatusCode: 502, Message: "upstream rejected headers: Bearer [redacted]"}) {
			t.Errorf("error %#v", *e)
		}
	})
	cfg := AnthropicConfig{Model: "claude-sonnet-4-5", APIKey: testKey}
	p, err := NewAnthropic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoKey(t, testKey, p, cfg)
}
