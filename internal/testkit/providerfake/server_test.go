package providerfake_test

import (
	"github.com/agentrun/agentrun/llm/providers"

	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/llm"
)

// newFake serves a Server over httptest.
func newFake(t *testing.T, cfg providerfake.Config) (*providerfake.Server, string) {
	t.Helper()
	s, err := providerfake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// ours returns our llm providers pointed at the fake's root URL.
func ours(t *testing.T, root string) map[string]llm.Streamer {
	t.Helper()
	o, err := providers.NewOpenAI(providers.OpenAIConfig{Model: "gpt-4o-mini", BaseURL: root + "/v1", APIKey: "sk-fake"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := providers.NewAnthropic(providers.AnthropicConfig{Model: "claude-sonnet-4-5", BaseURL: root, APIKey: "sk-ant-fake"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]llm.Streamer{providerfake.OpenAI: o, providerfake.Anthropic: a}
}

var lookup = agent.ToolSpec{Name: "lookup", Description: "Looks a topic up.",
	Schema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}`)}

// converse runs the agent loop against p until a text answer, at most 10
// turns, answering every tool call, and returns the tool calls and the
// final reply.
func converse(t *testing.T, p llm.Streamer, stream bool) ([]agent.ToolCall, agent.ModelReply) {
	t.Helper()
	req := agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleSystem, Content: "You look things up."}, {Role: agent.RoleUser, Content: "Look up the access policy."}},
		Tools:    []agent.ToolSpec{lookup, {Name: "file", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}},
	}
	var calls []agent.ToolCall
	for range 10 {
		var r agent.ModelReply
		var err error
		var streamed strings.Builder
		if stream {
			r, err = p.Stream(t.Context(), req, func(d string) { streamed.WriteString(d) })
		} else {
			r, err = p.Complete(t.Context(), req)
		}
		if err != nil {
			t.Fatalf("turn %d: %v", len(calls), err)
		}
		if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 {
			t.Errorf("turn %d: usage %+v, want input and output tokens", len(calls), r.Usage)
		}
		if len(r.Message.ToolCalls) == 0 {
			if stream && streamed.String() != r.Message.Content {
				t.Errorf("streamed %q, answer %q", streamed.String(), r.Message.Content)
			}
			return calls, r
		}
		if r.FinishReason != agent.FinishToolCalls {
			t.Errorf("turn %d: finish %q, want tool_calls", len(calls), r.FinishReason)
		}
		req.Messages = append(req.Messages, r.Message)
		for _, c := range r.Message.ToolCalls {
			calls = append(calls, c)
			req.Messages = append(req.Messages, agent.Message{Role: agent.RoleTool, ToolCallID: c.ID, Content: "policy: ask the data owner"})
		}
	}
	t.Fatal("no text answer within 10 turns")
	return nil, agent.ModelReply{}
}

// checkConversation asserts the fake's agent-like behaviour.
func checkConversation(t *testing.T, calls []agent.ToolCall, final agent.ModelReply, turns int) {
	t.Helper()
	if len(calls) != turns {
		t.Fatalf("%d tool calls, want %d", len(calls), turns)
	}
	ids := map[string]bool{}
	for _, c := range calls {
		if c.Name != "lookup" || string(c.Args) != `{"topic":"providerfake"}` {
			t.Errorf("tool call %s %s, want lookup {\"topic\":\"providerfake\"}", c.Name, c.Args)
		}
		ids[c.ID] = true
	}
	if len(ids) != turns {
		t.Errorf("tool call ids %v: want %d distinct", ids, turns)
	}
	if want := fmt.Sprintf("I read %d tool results.", turns); final.Message.Content != want || final.FinishReason != agent.FinishStop {
		t.Errorf("final answer %q (%s), want %q (stop)", final.Message.Content, final.FinishReason, want)
	}
}

func TestLLMProvidersConverse(t *testing.T) {
	t.Parallel()
	s, root := newFake(t, providerfake.Config{Turns: 2})
	for name, p := range ours(t, root) {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", name, stream), func(t *testing.T) {
				calls, final := converse(t, p, stream)
				checkConversation(t, calls, final, 2)
			})
		}
	}
	st := s.Stats()
	for _, name := range []string{providerfake.OpenAI, providerfake.Anthropic} {
		if got := st.Providers[name].Requests; got != 6 { // 2 conversations of 3 requests
			t.Errorf("%s: %d requests answered, want 6", name, got)
		}
	}
}

func TestNoToolsTextAnswer(t *testing.T) {
	t.Parallel()
	_, root := newFake(t, providerfake.Config{})
	for name, p := range ours(t, root) {
		r, err := p.Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hello"}}})
		if err != nil {
			t.Fatal(name, err)
		}
		if r.Message.Content != "I read 0 tool results." || len(r.Message.ToolCalls) != 0 {
			t.Errorf("%s: %+v, want a text answer", name, r.Message)
		}
	}
}

// post sends a raw request and returns the response and its decoded body.
func post(t *testing.T, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %s: not JSON: %v", url, b, err)
	}
	return res, v
}

// num reads a number at a path of keys.
func num(t *testing.T, v map[string]any, path ...string) int64 {
	t.Helper()
	var cur any = v
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%v: no %s in %v", path, k, cur)
		}
		cur = m[k]
	}
	f, ok := cur.(float64)
	if !ok {
		t.Fatalf("%v: %v is not a number", path, cur)
	}
	return int64(f)
}

func TestRateLimitRequests(t *testing.T) {
	t.Parallel()
	s, root := newFake(t, providerfake.Config{RPM: 2})
	oa := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	an := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	res, _ := post(t, root+"/v1/chat/completions", oa)
	if res.StatusCode != 200 || res.Header.Get("x-ratelimit-remaining-requests") != "1" || res.Header.Get("x-ratelimit-limit-requests") != "2" {
		t.Fatalf("first: %d %v", res.StatusCode, res.Header)
	}
	if got := res.Header.Get("x-ratelimit-reset-requests"); got != "1m0s" {
		t.Errorf("x-ratelimit-reset-requests %q, want 1m0s", got)
	}
	if res.Header.Get("x-ratelimit-limit-tokens") != "40000" || res.Header.Get("x-ratelimit-remaining-tokens") == "" {
		t.Errorf("token headers: %v", res.Header)
	}
	res, _ = post(t, root+"/v1/messages", an) // the limits are shared
	if res.StatusCode != 200 || res.Header.Get("anthropic-ratelimit-requests-remaining") != "0" {
		t.Fatalf("second: %d %v", res.StatusCode, res.Header)
	}
	for _, h := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		reset := res.Header.Get("anthropic-ratelimit-" + h + "-reset")
		if _, err := time.Parse(time.RFC3339, reset); err != nil || res.Header.Get("anthropic-ratelimit-"+h+"-limit") == "" {
			t.Errorf("anthropic-ratelimit-%s-*: limit %q reset %q (%v)", h, res.Header.Get("anthropic-ratelimit-"+h+"-limit"), reset, err)
		}
	}

	res, body := post(t, root+"/v1/chat/completions", oa)
	if res.StatusCode != 429 {
		t.Fatalf("third: %d, want 429", res.StatusCode)
	}
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 59 || ra > 60 {
		t.Errorf("Retry-After %q, want 59 or 60", res.Header.Get("Retry-After"))
	}
	e := body["error"].(map[string]any)
	if e["type"] != "requests" || e["code"] != "rate_limit_exceeded" || !strings.Contains(e["message"].(string), "Rate limit") {
		t.Errorf("OpenAI 429 body %v", body)
	}
	res, body = post(t, root+"/v1/messages", an)
	if res.StatusCode != 429 || res.Header.Get("retry-after") == "" || res.Header.Get("anthropic-ratelimit-requests-remaining") != "0" {
		t.Fatalf("fourth: %d %v", res.StatusCode, res.Header)
	}
	if e := body["error"].(map[string]any); body["type"] != "error" || e["type"] != "rate_limit_error" || e["message"] == "" {
		t.Errorf("Anthropic 429 body %v", body)
	}
	st := s.Stats()
	if st.Providers["openai"].RateLimited != 1 || st.Providers["anthropic"].RateLimited != 1 || st.PeakWindowRequests != 2 {
		t.Errorf("stats %+v %+v peak %d", st.Providers["openai"], st.Providers["anthropic"], st.PeakWindowRequests)
	}
}

func TestRateLimitTokensWithClock(t *testing.T) {
	t.Parallel()
	var now atomic.Int64 // unix seconds
	now.Store(1_800_000_000)
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	_, root := newFake(t, providerfake.Config{TPM: 300, Now: clock})
	big := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + strings.Repeat("x", 800) + `"}]}`
	res, body := post(t, root+"/v1/chat/completions", big)
	if res.StatusCode != 200 {
		t.Fatalf("%d %v", res.StatusCode, body)
	}
	in := num(t, body, "usage", "prompt_tokens")
	if in < 200 || in > 220 { // 800 bytes of text and the JSON around it
		t.Errorf("prompt_tokens %d, want about 800/4", in)
	}
	now.Add(20)
	res, body = post(t, root+"/v1/chat/completions", big)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "40" {
		t.Fatalf("second: %d Retry-After %q, want 429 after 40 s: %v", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	if e := body["error"].(map[string]any); e["type"] != "tokens" {
		t.Errorf("body %v, want type tokens", body)
	}
}

func TestOpenAICachedTokens(t *testing.T) {
	t.Parallel()
	s, root := newFake(t, providerfake.Config{})
	system := strings.Repeat("You file access requests carefully. ", 200) // about 1800 tokens
	msgs := func(extra ...string) string {
		m := []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": "first"}}
		for _, e := range extra {
			m = append(m, map[string]any{"role": "user", "content": e})
		}
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": m})
		return string(b)
	}
	_, first := post(t, root+"/v1/chat/completions", msgs())
	if got := num(t, first, "usage", "prompt_tokens_details", "cached_tokens"); got != 0 {
		t.Errorf("first request: %d cached, want 0", got)
	}
	_, second := post(t, root+"/v1/chat/completions", msgs("second"))
	cached, prompt := num(t, second, "usage", "prompt_tokens_details", "cached_tokens"), num(t, second, "usage", "prompt_tokens")
	whole := num(t, first, "usage", "prompt_tokens")
	if cached < 1024 || cached%128 != 0 || cached > whole || whole-cached >= 128 {
		t.Errorf("repeated prefix of %d tokens: %d cached, want it in 128-token steps", whole, cached)
	}
	if prompt <= whole {
		t.Errorf("prompt_tokens %d, want more than the first's %d", prompt, whole)
	}
	// A short prompt repeated is not cached (under 1024 tokens).
	short := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	post(t, root+"/v1/chat/completions", short)
	if _, b := post(t, root+"/v1/chat/completions", short); num(t, b, "usage", "prompt_tokens_details", "cached_tokens") != 0 {
		t.Errorf("short prompt cached: %v", b["usage"])
	}
	if got := s.Stats().Providers["openai"].CachedTokens; got != cached {
		t.Errorf("stats: %d cached tokens, want %d", got, cached)
	}
}

func TestAnthropicCachedTokens(t *testing.T) {
	t.Parallel()
	_, root := newFake(t, providerfake.Config{})
	system := strings.Repeat("You file access requests carefully. ", 200)
	req := func(mark bool, user string) string {
		sys := map[string]any{"type": "text", "text": system}
		if mark {
			sys["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100,
			"system":   []any{sys},
			"tools":    []any{map[string]any{"name": "lookup", "input_schema": map[string]any{"type": "object"}}},
			"messages": []any{map[string]any{"role": "user", "content": user}}})
		return string(b)
	}
	usage := func(body map[string]any) (in, write, read int64) {
		return num(t, body, "usage", "input_tokens"), num(t, body, "usage", "cache_creation_input_tokens"), num(t, body, "usage", "cache_read_input_tokens")
	}
	// No breakpoint: nothing is cached, however often it is sent.
	post(t, root+"/v1/messages", req(false, "a"))
	if in, w, r := usage(second(t, root, req(false, "b"))); w != 0 || r != 0 || in < 1024 {
		t.Errorf("unmarked: input %d, written %d, read %d; want all input", in, w, r)
	}
	_, first := post(t, root+"/v1/messages", req(true, "a"))
	in1, w1, r1 := usage(first)
	if w1 < 1024 || r1 != 0 || in1 <= 0 || in1 > 20 {
		t.Errorf("first marked: input %d, written %d, read %d; want the system prompt written", in1, w1, r1)
	}
	in2, w2, r2 := usage(second(t, root, req(true, "another question")))
	if r2 != w1 || w2 != 0 || in2 <= in1 {
		t.Errorf("second marked: input %d, written %d, read %d; want %d read", in2, w2, r2, w1)
	}
}

func second(t *testing.T, root, body string) map[string]any {
	t.Helper()
	res, b := post(t, root+"/v1/messages", body)
	if res.StatusCode != 200 {
		t.Fatalf("%d %v", res.StatusCode, b)
	}
	return b
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s, root := newFake(t, providerfake.Config{})
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"messages":[]}`, "no model"},
		{"/v1/chat/completions", `not json`, "not a chat completion request"},
		{"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "max_tokens"},
	} {
		res, body := post(t, root+c.path, c.body)
		b, _ := json.Marshal(body)
		if res.StatusCode != 400 || !bytes.Contains(b, []byte(c.want)) || !bytes.Contains(b, []byte("invalid_request_error")) {
			t.Errorf("%s %s: %d %s, want 400 naming %q", c.path, c.body, res.StatusCode, b, c.want)
		}
	}
	if st := s.Stats(); st.Providers["openai"].BadRequests != 2 || st.Providers["anthropic"].BadRequests != 1 || st.PeakWindowRequests != 0 {
		t.Errorf("stats %+v", st)
	}
	if _, err := providerfake.New(providerfake.Config{RPM: -1}); err == nil || !strings.Contains(err.Error(), "rpm -1") {
		t.Errorf("RPM -1: %v", err)
	}
}

// TestStreamedUsage reads the raw streams: OpenAI's usage chunk comes only
// with include_usage and carries the cached tokens; Anthropic's
// message_start and message_delta carry its three input counts (the
// system block: 7,200 bytes of text and its JSON, 1807 tokens).
func TestStreamedUsage(t *testing.T) {
	t.Parallel()
	_, root := newFake(t, providerfake.Config{})
	system := strings.Repeat("You file access requests carefully. ", 200)
	raw := func(path, body string) string {
		t.Helper()
		res, err := http.Post(root+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: %d %s: %s", path, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
		return string(b)
	}
	oa := func(usage bool) string {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": true, "stream_options": map[string]any{"include_usage": usage},
			"messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": "hi"}}})
		return string(b)
	}
	if s := raw("/v1/chat/completions", oa(false)); strings.Contains(s, `"prompt_tokens"`) || !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Errorf("without include_usage: %s", s)
	}
	if s := raw("/v1/chat/completions", oa(true)); !strings.Contains(s, `"choices":[]`) || !strings.Contains(s, `"cached_tokens":1792`) {
		t.Errorf("with include_usage, the prompt seen before: want a usage chunk with 1792 cached tokens: %s", s)
	}
	an, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
		"system":   []any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	raw("/v1/messages", string(an))
	s := raw("/v1/messages", string(an))
	for _, want := range []string{"event: message_start", `"cache_read_input_tokens":1807`, `"cache_creation_input_tokens":0`, "event: message_delta", "event: message_stop"} {
		if !strings.Contains(s, want) {
			t.Errorf("Anthropic stream: no %s in %s", want, s)
		}
	}
}
