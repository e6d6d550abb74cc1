package providers

import (
	"github.com/agentrun/agentrun/llm"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

// The helpers in this file serve the Anthropic and contract tests too.

const testKey = "sk-test-4f9a1c7e2b8d6035"

// fake is a local HTTP server that records every request it gets.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// newFake starts a server that records each request, then lets h answer.
func newFake(t *testing.T, h http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// only returns the one request the server got, failing unless there was
// exactly one.
func (f *fake) only(t *testing.T) recorded {
	t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want exactly 1", len(reqs))
	}
	return reqs[0]
}

// answer replies with status, a JSON body and header pairs.
func answer(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hangUp closes the connection without answering.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = c.Close()
	}
}

// cutShort promises the whole body and sends half of it.
func cutShort(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(200)
		_, _ = io.WriteString(w, body[:len(body)/2])
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertJSON fails unless got and want hold the same JSON value.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("JSON differs\ngot:\n%s\nwant:\n%s", gi, wi)
	}
}

// assertReply fails unless got equals want, field by field.
func assertReply(t *testing.T, got, want agent.ModelReply) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("reply differs\ngot:  %s\nwant: %s", g, w)
	}
}

// asError fails unless err is an *llm.Error, and returns it.
func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

func newTestOpenAI(t *testing.T, f *fake, cfg OpenAIConfig) *OpenAI {
	t.Helper()
	cfg.BaseURL = f.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	p, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var userOnly = agent.ModelRequest{Messages: []agent.Message{
	{Role: agent.RoleSystem, Content: "You file access requests."},
	{Role: agent.RoleUser, Content: hand.Prompt},
}}

func TestOpenAITextReply(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "openai_text.json")))
	p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})

	got, err := p.Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	assertReply(t, got, agent.ModelReply{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: "Your request is filed as TICKET-7. The data owner will review it."},
		FinishReason: agent.FinishStop,
		Usage:        agent.Usage{InputTokens: 182, OutputTokens: 17},
		Model:        "openai:gpt-4o-mini",
	})
	r := f.only(t)
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got, want := r.Header.Get("Authorization"), "Bearer "+testKey; got != want {
		t.Errorf("Authorization %q, want %q", got, want)
	}
	// The system prompt is the first message, with role system; no tools,
	// no token cap unless one is configured.
	assertJSON(t, r.Body, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You file access requests."},
			{"role": "user", "content": "`+hand.Prompt+`"}
		]
	}`)
}

func TestOpenAIToolCalls(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "openai_tool_calls.json")))
	p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey, MaxTokens: 1000})

	req := agent.ModelRequest{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "You file access requests."},
			{Role: agent.RoleUser, Content: hand.Prompt},
			{Role: agent.RoleAssistant, Content: "Looking it up.", ToolCalls: []agent.ToolCall{
				{ID: "call_1", Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)},
				{ID: "call_2", Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access"}`)},
			}},
			{Role: agent.RoleTool, ToolCallID: "call_1", Name: "lookup", Content: "Access needs a ticket approved by the data owner."},
			{Role: agent.RoleTool, ToolCallID: "call_2", Name: "create_ticket", Content: "denied: not during the freeze", IsError: true},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_3", Name: "now"}}},
			{Role: agent.RoleTool, ToolCallID: "call_3", Name: "now", Content: "2025-06-19T10:00:00Z"},
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
		Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: "call_Q8dFcBzDyNn1CwkUhm6K1kX4", Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)},
			{ID: "call_7pZTvYfMd1cYjBTsCRw0zXk2", Name: "create_ticket", Args: json.RawMessage(`{"title": "Read access to the orders database", "priority": 2}`)},
		}},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{InputTokens: 264, OutputTokens: 58},
		Model:        "openai:gpt-4o-mini",
		Settings:     &agent.ModelSettings{MaxTokens: 1000},
	})
	if string(got.Message.ToolCalls[1].Args) != `{"title": "Read access to the orders database", "priority": 2}` {
		t.Errorf("args %s, want the model's exact text", got.Message.ToolCalls[1].Args)
	}
	assertJSON(t, f.only(t).Body, `{
		"model": "gpt-4o-mini",
		"max_completion_tokens": 1000,
		"messages": [
			{"role": "system", "content": "You file access requests."},
			{"role": "user", "content": "`+hand.Prompt+`"},
			{"role": "assistant", "content": "Looking it up.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"topic\":\"database access\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "create_ticket", "arguments": "{\"title\":\"Read access\"}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "Access needs a ticket approved by the data owner."},
			{"role": "tool", "tool_call_id": "call_2", "content": "denied: not during the freeze"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_3", "type": "function", "function": {"name": "now", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_3", "content": "2025-06-19T10:00:00Z"}
		],
		"tools": [
			{"type": "function", "function": {
				"name": "lookup",
				"description": "Look up an access policy.",
				"parameters": {"type": "object", "properties": {"topic": {"type": "string", "maxLength": 200}}, "required": ["topic"], "additionalProperties": false}
			}},
			{"type": "function", "function": {
				"name": "now",
				"parameters": {"type": "object", "properties": {}}
			}}
		]
	}`)
}

func TestOpenAIFinishReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ wire, want string }{
		{"stop", agent.FinishStop},
		{"tool_calls", agent.FinishToolCalls},
		{"length", agent.FinishLength},
		{"content_filter", "content_filter"}, // passed through
	} {
		t.Run(tc.wire, func(t *testing.T) {
			t.Parallel()
			body := strings.Replace(readTestdata(t, "openai_text.json"), `"finish_reason": "stop"`, `"finish_reason": "`+tc.wire+`"`, 1)
			f := newFake(t, answer(200, body))
			got, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
			if err != nil {
				t.Fatal(err)
			}
			if got.FinishReason != tc.want {
				t.Errorf("finish reason %q, want %q", got.FinishReason, tc.want)
			}
		})
	}
}

func TestOpenAIToolArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, wire, want string }{
		{"object", `{"a": 1}`, `{"a": 1}`},
		{"empty", ``, `{}`},
		{"not JSON", `{"title": "Read acc`, `"{\"title\": \"Read acc"`},
		{"python dict", `{'a': 1}`, `"{'a': 1}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wire, _ := json.Marshal(tc.wire)
			body := fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1750325944,"model":"m",
				"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"create_ticket","arguments":%s}}]}}],
				"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, wire)
			f := newFake(t, answer(200, body))
			got, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Message.ToolCalls) != 1 {
				t.Fatalf("got %d tool calls, want 1", len(got.Message.ToolCalls))
			}
			if a := string(got.Message.ToolCalls[0].Args); a != tc.want {
				t.Errorf("args %s, want %s", a, tc.want)
			}
			if !json.Valid(got.Message.ToolCalls[0].Args) {
				t.Errorf("args %s are not JSON", got.Message.ToolCalls[0].Args)
			}
		})
	}
}

// errorCase is an error response and what Complete must make of it.
type errorCase struct {
	name   string
	status int
	header []string
	body   string
	want   llm.Error
}

func runErrorCases(t *testing.T, cases []errorCase, complete func(t *testing.T, f *fake) error) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(tc.status, tc.body, tc.header...))
			e := asError(t, complete(t, f))
			if *e != tc.want {
				t.Errorf("error\ngot:  %#v\nwant: %#v", *e, tc.want)
			}
			if e.Class.Retryable() != (tc.want.Class == llm.ClassRateLimit || tc.want.Class == llm.ClassServer || tc.want.Class == llm.ClassNetwork) {
				t.Errorf("class %s retryable = %v", e.Class, e.Class.Retryable())
			}
			// One request, even for retryable statuses: the SDK's retries are off.
			if n := len(f.requests()); n != 1 {
				t.Errorf("server got %d requests, want exactly 1", n)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	runErrorCases(t, openAIErrorCases(), func(t *testing.T, f *fake) error {
		_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
		return err
	})
}

// openAIErrorCases are error answers of OpenAI and compatible servers, for
// Complete and Stream alike.
func openAIErrorCases() []errorCase {
	ctxMsg := "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages."
	return []errorCase{
		{name: "429 retry-after seconds", status: 429, header: []string{"Retry-After", "7"},
			body: `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: llm.Error{Class: llm.ClassRateLimit, StatusCode: 429, RetryAfter: 7 * time.Second, Message: "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1."}},
		{name: "429 retry-after-ms", status: 429, header: []string{"Retry-After", "2", "retry-after-ms", "1500"},
			body: `{"error":{"message":"Rate limit reached.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			want: llm.Error{Class: llm.ClassRateLimit, StatusCode: 429, RetryAfter: 1500 * time.Millisecond, Message: "Rate limit reached."}},
		{name: "429 no header", status: 429,
			body: `{"error":{"message":"Rate limit reached.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			want: llm.Error{Class: llm.ClassRateLimit, StatusCode: 429, Message: "Rate limit reached."}},
		{name: "500", status: 500,
			body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			want: llm.Error{Class: llm.ClassServer, StatusCode: 500, Message: "The server had an error while processing your request. Sorry about that!"}},
		{name: "503", status: 503, header: []string{"Retry-After", "3"},
			body: `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`,
			want: llm.Error{Class: llm.ClassServer, StatusCode: 503, RetryAfter: 3 * time.Second, Message: "The engine is currently overloaded, please try again later."}},
		{name: "502 html from a proxy", status: 502, header: []string{"Content-Type", "text/html"},
			body: `<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>`,
			want: llm.Error{Class: llm.ClassServer, StatusCode: 502, Message: "Bad Gateway"}},
		{name: "400", status: 400,
			body: `{"error":{"message":"Invalid 'messages[3].tool_call_id': string too long.","type":"invalid_request_error","param":"messages[3].tool_call_id","code":"string_above_max_length"}}`,
			want: llm.Error{Class: llm.ClassBadRequest, StatusCode: 400, Message: "Invalid 'messages[3].tool_call_id': string too long."}},
		{name: "400 context length", status: 400,
			body: `{"error":{"message":"` + ctxMsg + `","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: llm.Error{Class: llm.ClassContextLength, StatusCode: 400, Message: "the conversation is longer than the model's context window: " + ctxMsg}},
		{name: "400 context length vLLM", status: 400,
			body: `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`,
			want: llm.Error{Class: llm.ClassContextLength, StatusCode: 400, Message: "the conversation is longer than the model's context window: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."}},
		{name: "400 context length llama.cpp", status: 400,
			body: `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			want: llm.Error{Class: llm.ClassContextLength, StatusCode: 400, Message: "the conversation is longer than the model's context window: the request exceeds the available context size, try increasing it"}},
		{name: "401", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-test-****6035. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			want: llm.Error{Class: llm.ClassAuth, StatusCode: 401, Message: "Incorrect API key provided: sk-test-****6035. You can find your API key at https://platform.openai.com/account/api-keys."}},
		{name: "403", status: 403,
			body: `{"error":{"message":"You are not allowed to sample from this model","type":"invalid_request_error","param":null,"code":null}}`,
			want: llm.Error{Class: llm.ClassAuth, StatusCode: 403, Message: "You are not allowed to sample from this model"}},
		{name: "404", status: 404,
			body: `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			want: llm.Error{Class: llm.ClassNotFound, StatusCode: 404, Message: "The model `gpt-9` does not exist or you do not have access to it."}},
		{name: "404 ollama", status: 404,
			body: `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
			want: llm.Error{Class: llm.ClassNotFound, StatusCode: 404, Message: `model "llama9" not found, try pulling it first`}},
		{name: "404 plain error string", status: 404, body: `{"error":"model 'llama9' not found"}`,
			want: llm.Error{Class: llm.ClassNotFound, StatusCode: 404, Message: "model 'llama9' not found"}},
	}
}

func TestOpenAINetworkErrors(t *testing.T) {
	t.Parallel()
	t.Run("closed connection", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, hangUp)
		_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassNetwork || e.StatusCode != 0 {
			t.Errorf("error %#v, want class %s without status", *e, llm.ClassNetwork)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("server got %d requests, want exactly 1", n)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, answer(200, "{}"))
		p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
		f.Close()
		_, err := p.Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassNetwork || !strings.Contains(e.Message, "connection refused") {
			t.Errorf("error %#v, want class %s about a refused connection", *e, llm.ClassNetwork)
		}
	})
	t.Run("unreadable success", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, answer(200, `{"id": "chatcmpl-1", "choices": [`))
		_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassServer || e.StatusCode != 200 {
			t.Errorf("error %#v, want class %s with status 200", *e, llm.ClassServer)
		}
	})
	t.Run("body cut short", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, cutShort(readTestdata(t, "openai_text.json")))
		_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
		if e := asError(t, err); e.Class != llm.ClassNetwork {
			t.Errorf("error %#v, want class %s", *e, llm.ClassNetwork)
		}
	})
	t.Run("no choices", func(t *testing.T) {
		t.Parallel()
		f := newFake(t, answer(200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[]}`))
		_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Complete(t.Context(), userOnly)
		if e := asError(t, err); *e != (llm.Error{Class: llm.ClassServer, StatusCode: 200, Message: "the server's answer has no choices"}) {
			t.Errorf("error %#v", *e)
		}
	})
}

func TestOpenAICancellation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want error
	}{{"canceled", context.Canceled}, {"deadline", context.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arrived := make(chan struct{})
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				<-r.Context().Done() // hold the call until the client gives up
			})
			p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
			ctx, cancel := context.WithCancel(t.Context())
			if tc.want == context.DeadlineExceeded {
				ctx, cancel = context.WithTimeout(t.Context(), 200*time.Millisecond)
			}
			defer cancel()
			go func() {
				<-arrived
				if tc.want == context.Canceled {
					cancel()
				}
			}()
			_, err := p.Complete(ctx, userOnly)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			var e *llm.Error
			if errors.As(err, &e) {
				t.Errorf("cancellation came back as %#v, want the context's error", *e)
			}
		})
	}
}

func TestOpenAIRequestErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "openai_text.json")))
	p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
	for _, tc := range []struct {
		name string
		req  agent.ModelRequest
		want string
	}{
		{"unknown role", agent.ModelRequest{Messages: []agent.Message{{Role: "narrator", Content: "x"}}}, `message 0 has role "narrator": want system, user, assistant or tool`},
		{"bad schema", agent.ModelRequest{Messages: userOnly.Messages, Tools: []agent.ToolSpec{{Name: "lookup", Schema: json.RawMessage(`["topic"]`)}}}, "tool lookup: the schema of its arguments is not a JSON object"},
	} {
		_, err := p.Complete(t.Context(), tc.req)
		if e := asError(t, err); *e != (llm.Error{Class: llm.ClassBadRequest, Message: tc.want}) {
			t.Errorf("%s: error %#v, want %s: %s", tc.name, *e, llm.ClassBadRequest, tc.want)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("server got %d requests, want none", n)
	}
}

func TestOpenAILocalServerWithoutKey(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "openai_text.json")))
	p, err := New("openai:llama3.1:8b", withEnv(map[string]string{"OPENAI_BASE_URL": f.URL + "/v1"}, llm.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "openai:llama3.1:8b" {
		t.Errorf("model %q, want openai:llama3.1:8b", got.Model)
	}
	r := f.only(t)
	if a := r.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent without a key", a)
	}
	var body struct{ Model string }
	_ = json.Unmarshal(r.Body, &body)
	if body.Model != "llama3.1:8b" {
		t.Errorf("model on the wire %q, want llama3.1:8b", body.Model)
	}
}

// TestOpenAIKeyNeverShown makes the server echo the request's credentials
// in its error bodies.
func TestOpenAIKeyNeverShown(t *testing.T) {
	t.Parallel()
	echo := func(status int, jsonBody bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			seen := fmt.Sprintf("Authorization: %s, x-api-key: %s", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
			if !jsonBody {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, "bad request headers: "+seen)
				return
			}
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "Incorrect API key provided in " + seen, "type": "invalid_request_error", "code": "invalid_api_key"}})
			answer(status, string(b))(w, r)
		}
	}
	for _, tc := range []struct {
		status int
		json   bool
	}{{401, true}, {400, true}, {429, true}, {500, false}, {403, false}} {
		t.Run(fmt.Sprint(tc.status, tc.json), func(t *testing.T) {
			t.Parallel()
			f := newFake(t, echo(tc.status, tc.json))
			p := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
			_, err := p.Complete(t.Context(), userOnly)
			if err == nil {
				t.Fatal("no error")
			}
			if s := fmt.Sprintf("%v %+v %#v %s", err, err, err, asError(t, err).Message); strings.Contains(s, testKey) {
				t.Fatalf("the error shows the key: %s", s)
			}
			if !strings.Contains(err.Error(), "Bearer [redacted]") {
				t.Errorf("error %q: want the echoed header, scrubbed", err)
			}
		})
	}
	cfg := OpenAIConfig{Model: "gpt-4o-mini", APIKey: testKey}
	p, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNoKey(t, testKey, p, cfg)
}

// assertNoKey fails if any usual way of printing or logging vs shows key.
func assertNoKey(t *testing.T, key string, vs ...any) {
	t.Helper()
	var b bytes.Buffer
	for _, v := range vs {
		fmt.Fprintf(&b, "%v %+v %#v %s\n", v, v, v, v)
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
			fmt.Fprintf(&b, "%v %+v %#v\n", rv.Elem().Interface(), rv.Elem().Interface(), rv.Elem().Interface())
		}
		j, _ := json.Marshal(v)
		b.Write(j)
	}
	text := slog.New(slog.NewTextHandler(&b, nil))
	js := slog.New(slog.NewJSONHandler(&b, nil))
	for _, v := range vs {
		text.Info("provider", "v", v)
		js.Info("provider", "v", v)
	}
	if strings.Contains(b.String(), key) {
		t.Fatalf("the key shows:\n%s", b.String())
	}
}
