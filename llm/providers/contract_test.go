package providers

import (
	"github.com/agentrun/agentrun/llm"

	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// The contract: what the engine relies on from an OpenAI-compatible server,
// checked against a local fake that speaks the wire format and, when
// AGENTRUN_TEST_OPENAI_BASE_URL is set, against a real server.

var addTool = agent.ToolSpec{
	Name:        "add",
	Description: "Add two integers and return their sum.",
	Schema:      json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
	Kind:        agent.KindRead,
}

// add is the trivial tool of the round trip.
func add(args json.RawMessage) agent.ToolResult {
	var in struct{ A, B json.Number }
	if err := json.Unmarshal(args, &in); err != nil {
		return agent.ToolResult{Content: "bad arguments: " + err.Error(), IsError: true}
	}
	a, errA := in.A.Int64()
	b, errB := in.B.Int64()
	if errA != nil || errB != nil {
		return agent.ToolResult{Content: "a and b must be integers", IsError: true}
	}
	return agent.ToolResult{Content: fmt.Sprint(a + b)}
}

// contractCase is one step of the contract; exact marks the fake, whose
// answers are known to the letter.
func runOpenAIContract(t *testing.T, p llm.Provider, exact bool) {
	t.Run("text reply", func(t *testing.T) {
		req := agent.ModelRequest{Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "You are a terse test assistant."},
			{Role: agent.RoleUser, Content: "Reply with the single word pong, in lower case, and nothing else."},
		}}
		got, err := p.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got.Message.Role != agent.RoleAssistant || len(got.Message.ToolCalls) != 0 || got.FinishReason != agent.FinishStop || got.Model != p.Name() {
			t.Fatalf("reply %+v: want an assistant text that stops, from %s", got, p.Name())
		}
		if !strings.Contains(strings.ToLower(got.Message.Content), "pong") {
			t.Errorf("content %q, want pong", got.Message.Content)
		}
		if got.Usage.InputTokens <= 0 || got.Usage.OutputTokens <= 0 {
			t.Errorf("usage %+v, want both counts", got.Usage)
		}
		if exact && got.Message.Content != "pong" {
			t.Errorf("content %q, want exactly pong", got.Message.Content)
		}
	})
	t.Run("tool round trip", func(t *testing.T) {
		msgs := []agent.Message{
			{Role: agent.RoleSystem, Content: "You are a calculator. Always use the add tool for additions."},
			{Role: agent.RoleUser, Content: "What is 2 + 3? Use the add tool, then answer with the number."},
		}
		tools := []agent.ToolSpec{addTool}
		first, err := p.Complete(t.Context(), agent.ModelRequest{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		if first.FinishReason != agent.FinishToolCalls || len(first.Message.ToolCalls) == 0 {
			t.Fatalf("reply %+v: want a call of add", first)
		}
		call := first.Message.ToolCalls[0]
		if call.Name != "add" || call.ID == "" {
			t.Fatalf("call %+v: want add, with an id", call)
		}
		res := add(call.Args)
		if res.IsError || res.Content != "5" {
			t.Fatalf("add(%s) = %+v, want 5", call.Args, res)
		}
		if exact && string(call.Args) != `{"a":2,"b":3}` {
			t.Errorf("args %s, want exactly {\"a\":2,\"b\":3}", call.Args)
		}
		msgs = append(msgs, first.Message)
		for _, c := range first.Message.ToolCalls { // answer every call, as the engine does
			r := add(c.Args)
			msgs = append(msgs, agent.Message{Role: agent.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: r.Content, IsError: r.IsError})
		}
		final, err := p.Complete(t.Context(), agent.ModelRequest{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		if final.FinishReason != agent.FinishStop || len(final.Message.ToolCalls) != 0 || !strings.Contains(final.Message.Content, "5") {
			t.Fatalf("final reply %+v: want a text with 5", final)
		}
		if exact && final.Message.Content != "2 + 3 = 5" {
			t.Errorf("content %q, want exactly 2 + 3 = 5", final.Message.Content)
		}
	})
}

// chatFake is a Chat Completions server that behaves like a model that
// follows instructions: with tools on offer and no tool result yet, it calls
// add(2, 3); after a tool result it states it; otherwise it says pong. It
// refuses, as OpenAI does, a tool result that answers no call of the
// assistant message before it.
func chatFake(t *testing.T) *fake {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	return newFake(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			Messages []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCalls  []call `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
			Tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" || len(req.Messages) == 0 {
			answer(400, `{"error":{"message":"malformed request","type":"invalid_request_error","param":null,"code":null}}`)(w, r)
			return
		}
		calls := map[string]bool{}
		for i, m := range req.Messages {
			switch m.Role {
			case "assistant":
				clear(calls)
				for _, c := range m.ToolCalls {
					calls[c.ID] = c.Type == "function" && json.Valid([]byte(c.Function.Arguments))
				}
			case "tool":
				if !calls[m.ToolCallID] {
					answer(400, fmt.Sprintf(`{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[%d])","type":"invalid_request_error","param":"messages.[%d].role","code":null}}`, i, i))(w, r)
					return
				}
			}
		}
		last := req.Messages[len(req.Messages)-1]
		message := `{"role":"assistant","content":"pong","refusal":null}`
		text, finish := "pong", "stop"
		switch {
		case last.Role == "tool":
			text = "2 + 3 = " + last.Content
			b, _ := json.Marshal(text)
			message = `{"role":"assistant","content":` + string(b) + `,"refusal":null}`
		case len(req.Tools) > 0 && req.Tools[0].Type == "function" && req.Tools[0].Function.Name == "add" && json.Valid(req.Tools[0].Function.Parameters):
			message = `{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_add_1","type":"function","function":{"name":"add","arguments":"{\"a\":2,\"b\":3}"}}]}`
			text, finish = "", "tool_calls"
		}
		if req.Stream {
			// The same answer in chunks: the text in two pieces, the
			// call's arguments in two, the usage last when asked for.
			chunk := func(delta, finish string) string {
				return fmt.Sprintf(`data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1750325944,"model":%q,"choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]}`+"\n\n", req.Model, delta, finish)
			}
			events := []string{chunk(`{"role":"assistant","content":"","refusal":null}`, "null")}
			if text != "" {
				a, _ := json.Marshal(text[:len(text)/2])
				b, _ := json.Marshal(text[len(text)/2:])
				events = append(events, chunk(`{"content":`+string(a)+`}`, "null"), chunk(`{"content":`+string(b)+`}`, "null"))
			} else {
				events = append(events,
					chunk(`{"tool_calls":[{"index":0,"id":"call_add_1","type":"function","function":{"name":"add","arguments":"{\"a\":"}}]}`, "null"),
					chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"2,\"b\":3}"}}]}`, "null"))
			}
			events = append(events, chunk(`{}`, `"`+finish+`"`))
			if req.StreamOptions.IncludeUsage {
				events = append(events, fmt.Sprintf(`data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1750325944,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":7,"total_tokens":%d}}`+"\n\n", req.Model, 10*len(req.Messages), 10*len(req.Messages)+7))
			}
			streaming(endNormally, append(events, "data: [DONE]\n\n")...)(w, r)
			return
		}
		answer(200, fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion","created":1750325944,"model":%q,
			"choices":[{"index":0,"message":%s,"logprobs":null,"finish_reason":%q}],
			"usage":{"prompt_tokens":%d,"completion_tokens":7,"total_tokens":%d}}`, req.Model, message, finish, 10*len(req.Messages), 10*len(req.Messages)+7))(w, r)
	})
}

func TestOpenAIContract(t *testing.T) {
	t.Parallel()
	t.Run("fake server", func(t *testing.T) {
		t.Parallel()
		f := chatFake(t)
		p, err := New("openai:gpt-4o-mini", withEnv(map[string]string{"OPENAI_BASE_URL": f.URL + "/v1", "OPENAI_API_KEY": testKey}, llm.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		runOpenAIContract(t, p, true)
		if n := len(f.requests()); n != 3 {
			t.Errorf("server got %d requests, want 3 (one per model call)", n)
		}
	})
	t.Run("fake server, streamed", func(t *testing.T) {
		t.Parallel()
		f := chatFake(t)
		p, err := New("openai:gpt-4o-mini", withEnv(map[string]string{"OPENAI_BASE_URL": f.URL + "/v1", "OPENAI_API_KEY": testKey}, llm.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		runOpenAIContract(t, streamed{p.(llm.Streamer)}, true)
		if n := len(f.requests()); n != 3 {
			t.Errorf("server got %d requests, want 3 (one per model call)", n)
		}
	})
	t.Run("fake server, Complete and Stream agree", func(t *testing.T) {
		t.Parallel()
		p := newTestOpenAI(t, chatFake(t), OpenAIConfig{APIKey: testKey})
		for _, req := range []agent.ModelRequest{
			{Messages: []agent.Message{{Role: agent.RoleUser, Content: "Say pong."}}},
			{Messages: []agent.Message{{Role: agent.RoleUser, Content: "What is 2 + 3?"}}, Tools: []agent.ToolSpec{addTool}},
			{Messages: []agent.Message{
				{Role: agent.RoleUser, Content: "What is 2 + 3?"},
				{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_add_1", Name: "add", Args: json.RawMessage(`{"a":2,"b":3}`)}}},
				{Role: agent.RoleTool, ToolCallID: "call_add_1", Name: "add", Content: "5"},
			}, Tools: []agent.ToolSpec{addTool}},
		} {
			completed, err := p.Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := streamed{p}.Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			assertReply(t, streamed, completed)
		}
	})
	t.Run("real server", func(t *testing.T) {
		t.Parallel()
		base := os.Getenv("AGENTRUN_TEST_OPENAI_BASE_URL")
		if base == "" {
			t.Skip("set AGENTRUN_TEST_OPENAI_BASE_URL (e.g. http://localhost:11434/v1) to run this contract against a real OpenAI-compatible server; AGENTRUN_TEST_OPENAI_MODEL (default gpt-4o-mini) and AGENTRUN_TEST_OPENAI_API_KEY are optional")
		}
		p, err := NewOpenAI(OpenAIConfig{
			Model:   cmp.Or(os.Getenv("AGENTRUN_TEST_OPENAI_MODEL"), "gpt-4o-mini"),
			BaseURL: base,
			APIKey:  os.Getenv("AGENTRUN_TEST_OPENAI_API_KEY"),
		})
		if err != nil {
			t.Fatal(err)
		}
		runOpenAIContract(t, p, false)
		t.Run("streamed", func(t *testing.T) { runOpenAIContract(t, streamed{p}, false) })
	})
}

// streamed is a llm.Streamer whose Complete streams, and fails unless the
// pieces of text add up to the reply's text.
type streamed struct{ llm.Streamer }

func (s streamed) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	var pieces collect
	r, err := s.Stream(ctx, req, pieces.add)
	if err == nil && strings.Join(pieces, "") != r.Message.Content {
		return r, fmt.Errorf("the pieces %q do not add up to the reply's text %q", pieces, r.Message.Content)
	}
	return r, err
}

// withEnv is o with the llm.Account that internal/config reads from the
// variables in env (it parses AGENTRUN_MAX_TOKENS; its malformed values
// are tested there).
func withEnv(env map[string]string, o llm.Options) llm.Options {
	n, _ := strconv.ParseInt(env["AGENTRUN_MAX_TOKENS"], 10, 64)
	o.Account = llm.Account{
		OpenAIAPIKey: env["OPENAI_API_KEY"], OpenAIBaseURL: env["OPENAI_BASE_URL"],
		OpenAIOrganization: env["OPENAI_ORG_ID"], OpenAIProject: env["OPENAI_PROJECT_ID"],
		AnthropicAPIKey: env["ANTHROPIC_API_KEY"], AnthropicBaseURL: env["ANTHROPIC_BASE_URL"],
		MaxTokens: n,
	}
	return o
}

// TestNew: New builds each provider from its account settings, and a
// missing or malformed one is an error naming the variable.
func TestNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec    string
		env     map[string]string
		name    string // the provider's Name, when it builds
		wantErr []string
	}{
		{spec: "", name: "scripted"},
		{spec: "scripted", name: "scripted"},
		{spec: "openai:gpt-4o-mini", env: map[string]string{"OPENAI_API_KEY": testKey}, name: "openai:gpt-4o-mini"},
		{spec: "openai:llama3.1:8b", env: map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"}, name: "openai:llama3.1:8b"},
		{spec: "anthropic:claude-sonnet-4-5", env: map[string]string{"ANTHROPIC_API_KEY": testKey}, name: "anthropic:claude-sonnet-4-5"},
		{spec: "anthropic:claude-sonnet-4-5", env: map[string]string{"ANTHROPIC_API_KEY": testKey, "AGENTRUN_MAX_TOKENS": "8192"}, name: "anthropic:claude-sonnet-4-5"},
		{spec: "openai:", env: map[string]string{"OPENAI_API_KEY": testKey}, wantErr: []string{`"openai:" names no model`, `"openai:MODEL"`, `"anthropic:MODEL"`, `"scripted:PATH"`}},
		{spec: "anthropic:", env: map[string]string{"ANTHROPIC_API_KEY": testKey}, wantErr: []string{`"anthropic:" names no model`, `"openai:MODEL"`, `"anthropic:MODEL"`}},
		{spec: "openai:gpt-4o-mini", wantErr: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{spec: "anthropic:claude-sonnet-4-5", env: map[string]string{"OPENAI_API_KEY": testKey}, wantErr: []string{"ANTHROPIC_API_KEY"}},
		{spec: "openai:gpt-4o-mini", env: map[string]string{"OPENAI_BASE_URL": "localhost:8000"}, wantErr: []string{"OPENAI_BASE_URL", "not an http or https URL"}},
		{spec: "anthropic:claude-sonnet-4-5", env: map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": "ftp://x"}, wantErr: []string{"ANTHROPIC_BASE_URL"}},
		{spec: "anthropic:claude-sonnet-4-5", env: map[string]string{"ANTHROPIC_API_KEY": testKey, "AGENTRUN_MAX_TOKENS": "100000"}, wantErr: []string{"AGENTRUN_MAX_TOKENS", "non-streaming"}},
		{spec: "gemini:pro", wantErr: []string{`unknown model "gemini:pro"`, `"openai:MODEL"`, `"anthropic:MODEL"`}},
	} {
		p, err := New(tc.spec, withEnv(tc.env, llm.Options{}))
		if len(tc.wantErr) > 0 {
			if err == nil {
				t.Errorf("%q %v: built %s, want an error", tc.spec, tc.env, p.Name())
				continue
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q %v: error %q does not say %q", tc.spec, tc.env, err, w)
				}
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("%q: error %q shows the key", tc.spec, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %v: %v", tc.spec, tc.env, err)
			continue
		}
		if p.Name() != tc.name {
			t.Errorf("%q: name %q, want %q", tc.spec, p.Name(), tc.name)
		}
	}
}

func TestMaxTokensFromEnv(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(200, readTestdata(t, "anthropic_text.json")))
	p, err := New("anthropic:claude-sonnet-4-5", withEnv(map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": f.URL, "AGENTRUN_MAX_TOKENS": "512"}, llm.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(t.Context(), userOnly); err != nil {
		t.Fatal(err)
	}
	var body struct {
		MaxTokens int64 `json:"max_tokens"`
	}
	if err := json.Unmarshal(f.only(t).Body, &body); err != nil || body.MaxTokens != 512 {
		t.Errorf("max_tokens %d (%v), want 512", body.MaxTokens, err)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 19, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header []string
		want   time.Duration
	}{
		{nil, 0},
		{[]string{"Retry-After", "7"}, 7 * time.Second},
		{[]string{"Retry-After", "0.5"}, 500 * time.Millisecond},
		{[]string{"Retry-After", "Thu, 19 Jun 2025 10:00:30 GMT"}, 30 * time.Second},
		{[]string{"Retry-After", "Thu, 19 Jun 2025 09:59:00 GMT"}, 0}, // past
		{[]string{"Retry-After", "soon"}, 0},
		{[]string{"Retry-After", "-3"}, 0},
		{[]string{"Retry-After", "1e300"}, 0},
		{[]string{"Retry-After", "300"}, llm.MaxRetryAfter},
		{[]string{"Retry-After", "86400"}, llm.MaxRetryAfter},
		{[]string{"Retry-After", "Fri, 20 Jun 2025 10:00:00 GMT"}, llm.MaxRetryAfter}, // a day ahead
		{[]string{"Retry-After-Ms", "3600000"}, llm.MaxRetryAfter},
		{[]string{"Retry-After", "20", "Retry-After-Ms", "250"}, 250 * time.Millisecond},
		{[]string{"Retry-After", "20", "Retry-After-Ms", "x"}, 20 * time.Second},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(tc.header); i += 2 {
			h.Set(tc.header[i], tc.header[i+1])
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

// TestProvidersDoNotLog runs both providers, successes and failures,
// answered whole and streamed, with the standard loggers captured: a
// provider must not log at all, prompts least of all. Not parallel: it
// swaps process-wide loggers.
func TestProvidersDoNotLog(t *testing.T) {
	var buf bytes.Buffer
	oldLog, oldFlags, oldSlog := log.Writer(), log.Flags(), slog.Default()
	log.SetOutput(&buf)
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		log.SetOutput(oldLog)
		log.SetFlags(oldFlags)
		slog.SetDefault(oldSlog)
	})
	const prompt = "the secret plan is to reorganise the orders database"
	req := agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: prompt}}, Tools: []agent.ToolSpec{addTool}}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"openai ok", answer(200, readTestdata(t, "openai_text.json"))},
		{"openai 400", answer(400, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`)},
		{"anthropic ok", answer(200, readTestdata(t, "anthropic_text.json"))},
		{"anthropic 529", answer(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
		{"openai streamed", streaming(endNormally, sseEvents(t, "openai_text.sse")...)},
		{"openai streamed error", streaming(endNormally, sseEvents(t, "openai_text.sse")[0], `data: {"error":{"message":"bad","type":"server_error"}}`+"\n\n")},
		{"anthropic streamed", streaming(endNormally, sseEvents(t, "anthropic_text.sse")...)},
		{"anthropic streamed cut", streaming(endAbort, sseEvents(t, "anthropic_text.sse")[:4]...)},
	} {
		f := newFake(t, tc.h)
		var p llm.Provider
		if strings.HasPrefix(tc.name, "openai") {
			p = newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey})
		} else {
			p = newTestAnthropic(t, f, AnthropicConfig{})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		if strings.Contains(tc.name, "streamed") {
			_, _ = p.(llm.Streamer).Stream(ctx, req, func(string) {})
		} else {
			_, _ = p.Complete(ctx, req)
		}
		cancel()
	}
	if buf.Len() > 0 {
		t.Errorf("providers logged:\n%s", buf.String())
	}
}

// TestRetryAfterCapShown: a 429 asking for hours waits llm.MaxRetryAfter, and
// its message says what the server asked and the cap.
func TestRetryAfterCapShown(t *testing.T) {
	t.Parallel()
	res := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"7200"}},
		Body: io.NopCloser(strings.NewReader(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))}
	e := httpError(res, func(s string) string { return s }, time.Now())
	if e.Class != llm.ClassRateLimit || e.RetryAfter != llm.MaxRetryAfter || !strings.Contains(e.Message, "the server asked to wait 2h0m0s before trying again; agentrun waits at most 5m0s") {
		t.Fatalf("error %+v", e)
	}
	res = &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"12"}}, Body: io.NopCloser(strings.NewReader(`{}`))}
	if e := httpError(res, func(s string) string { return s }, time.Now()); e.RetryAfter != 12*time.Second || strings.Contains(e.Message, "asked to wait") {
		t.Fatalf("an uncapped wait: %+v", e)
	}
}
