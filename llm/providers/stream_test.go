package providers

import (
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/llm"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// The streaming tests: local servers that send recorded event streams
// (testdata/*.sse, the streamed forms of the recorded answers in
// testdata/*.json), one event per write and flush.

// sseEvents reads a recorded stream and returns its events, each with the
// blank line that ends it.
func sseEvents(t *testing.T, name string) []string {
	t.Helper()
	var events []string
	for _, e := range strings.Split(readTestdata(t, name), "\n\n") {
		if strings.TrimSpace(e) != "" {
			events = append(events, e+"\n\n")
		}
	}
	return events
}

// How a streamed answer ends after its events.
type streamEnd int

const (
	endNormally streamEnd = iota // the handler returns: the body ends cleanly
	endAbort                     // the connection is dropped mid-body
	endStall                     // nothing more is sent until the client gives up
)

// streaming answers 200 with an event stream of events, each written and
// flushed in turn, then ends as end says.
func streaming(end streamEnd, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		fl.Flush()
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			fl.Flush()
		}
		switch end {
		case endAbort:
			panic(http.ErrAbortHandler) // the server drops the connection, quietly
		case endStall:
			<-r.Context().Done()
		}
	}
}

// collect gathers the pieces of text a Stream delivers.
type collect []string

func (c *collect) add(s string) { *c = append(*c, s) }

// streamAdapter is what the tests common to both adapters need of one.
type streamAdapter struct {
	name string
	new  func(t *testing.T, f *fake, timeout time.Duration) llm.Streamer
	// text is the recorded streamed text answer; its text pieces are
	// textPieces, and its events up to the second piece the first
	// throughSecond events.
	text          string
	throughSecond int
}

var textPieces = []string{"Your request", " is filed as", " TICKET-7.", " The data owner", " will review it."}

func streamAdapters() []streamAdapter {
	return []streamAdapter{
		{name: "openai", text: "openai_text.sse", throughSecond: 3,
			new: func(t *testing.T, f *fake, timeout time.Duration) llm.Streamer {
				return newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey, Timeout: timeout})
			}},
		{name: "anthropic", text: "anthropic_text.sse", throughSecond: 5,
			new: func(t *testing.T, f *fake, timeout time.Duration) llm.Streamer {
				return newTestAnthropic(t, f, AnthropicConfig{Timeout: timeout})
			}},
	}
}

// TestStreamMatchesComplete is the contract of Stream: for the same answer,
// recorded whole and streamed, Stream returns the reply Complete returns
// (which is the reply stated here), its text pieces add up to the reply's
// text, and both send the same request but for the stream fields.
func TestStreamMatchesComplete(t *testing.T) {
	t.Parallel()
	toolReq := agent.ModelRequest{Messages: userOnly.Messages, Tools: []agent.ToolSpec{addTool}}
	openAITools := []agent.ToolCall{
		{ID: "call_Q8dFcBzDyNn1CwkUhm6K1kX4", Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)},
		{ID: "call_7pZTvYfMd1cYjBTsCRw0zXk2", Name: "create_ticket", Args: json.RawMessage(`{"title": "Read access to the orders database", "priority": 2}`)},
	}
	anthropicTools := []agent.ToolCall{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "lookup", Args: json.RawMessage(`{"topic": "database access"}`)},
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "create_ticket", Args: json.RawMessage(`{"title": "Read access to the orders database", "priority": 2}`)},
	}
	text := "Your request is filed as TICKET-7. The data owner will review it."
	cachedAnthropic := agent.ModelReply{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
		FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 22 + 268 + 1805, OutputTokens: 503, CacheReadTokens: 1805, CacheWriteTokens: 268},
		Model: "anthropic:claude-sonnet-4-5", Settings: &agent.ModelSettings{MaxTokens: 4096},
	}
	for _, tc := range []struct {
		name         string
		whole, sse   string
		edit         func(string) string // applied to both recordings
		req          agent.ModelRequest
		want         agent.ModelReply
		wantPieces   []string
		openAI       bool
		exactToolArg bool
	}{
		{name: "openai text", whole: "openai_text.json", sse: "openai_text.sse", req: userOnly, openAI: true,
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
				FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 182, OutputTokens: 17}, Model: "openai:gpt-4o-mini",
			}, wantPieces: textPieces},
		{name: "openai tool calls", whole: "openai_tool_calls.json", sse: "openai_tool_calls.sse", req: toolReq, openAI: true, exactToolArg: true,
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, ToolCalls: openAITools},
				FinishReason: agent.FinishToolCalls, Usage: agent.Usage{InputTokens: 264, OutputTokens: 58}, Model: "openai:gpt-4o-mini",
			}},
		{name: "openai cut off", whole: "openai_text.json", sse: "openai_text.sse", req: userOnly, openAI: true,
			edit: func(s string) string {
				return strings.NewReplacer(`"finish_reason": "stop"`, `"finish_reason": "length"`, `"finish_reason":"stop"`, `"finish_reason":"length"`).Replace(s)
			},
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
				FinishReason: agent.FinishLength, Usage: agent.Usage{InputTokens: 182, OutputTokens: 17}, Model: "openai:gpt-4o-mini",
			}, wantPieces: textPieces},
		{name: "openai cached", whole: "openai_cached.json", sse: "openai_cached.sse", req: userOnly, openAI: true,
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
				FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 2006, OutputTokens: 17, CacheReadTokens: 1920}, Model: "openai:gpt-4o-mini",
			}, wantPieces: textPieces},
		// Anthropic counts the cache's reads and writes apart from
		// input_tokens; InputTokens is their sum. message_delta's counts
		// are the message's totals and have the last word; one without
		// them (as the API sent before) leaves message_start's.
		{name: "anthropic cached", whole: "anthropic_cached.json", sse: "anthropic_cached.sse", req: userOnly,
			want: cachedAnthropic, wantPieces: textPieces},
		{name: "anthropic cached, counted in message_start only", whole: "anthropic_cached.json", sse: "anthropic_cached.sse", req: userOnly,
			edit: func(s string) string {
				return strings.Replace(s, `"usage":{"input_tokens":22,"cache_creation_input_tokens":268,"cache_read_input_tokens":1805,"output_tokens":503}`, `"usage":{"output_tokens":503}`, 1)
			},
			want: cachedAnthropic, wantPieces: textPieces},
		{name: "anthropic cached, counted in message_delta only", whole: "anthropic_cached.json", sse: "anthropic_cached.sse", req: userOnly,
			edit: func(s string) string {
				return strings.Replace(s, `"cache_creation_input_tokens":268,"cache_read_input_tokens":1805,"cache_creation":`, `"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":`, 1)
			},
			want: cachedAnthropic, wantPieces: textPieces},
		{name: "anthropic text", whole: "anthropic_text.json", sse: "anthropic_text.sse", req: userOnly,
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
				FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 2095, OutputTokens: 503}, Model: "anthropic:claude-sonnet-4-5",
				Settings: &agent.ModelSettings{MaxTokens: 4096},
			}, wantPieces: textPieces},
		{name: "anthropic tool use", whole: "anthropic_tool_use.json", sse: "anthropic_tool_use.sse", req: toolReq,
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: "I'll look up the access policy and file the ticket.", ToolCalls: anthropicTools},
				FinishReason: agent.FinishToolCalls, Usage: agent.Usage{InputTokens: 472, OutputTokens: 134}, Model: "anthropic:claude-sonnet-4-5",
				Settings: &agent.ModelSettings{MaxTokens: 4096},
			}, wantPieces: []string{"I'll look up", " the access policy", " and file the ticket."}},
		{name: "anthropic cut off", whole: "anthropic_text.json", sse: "anthropic_text.sse", req: userOnly,
			edit: func(s string) string {
				return strings.NewReplacer(`"stop_reason": "end_turn"`, `"stop_reason": "max_tokens"`, `"stop_reason":"end_turn"`, `"stop_reason":"max_tokens"`).Replace(s)
			},
			want: agent.ModelReply{
				Message:      agent.Message{Role: agent.RoleAssistant, Content: text},
				FinishReason: agent.FinishLength, Usage: agent.Usage{InputTokens: 2095, OutputTokens: 503}, Model: "anthropic:claude-sonnet-4-5",
				Settings: &agent.ModelSettings{MaxTokens: 4096},
			}, wantPieces: textPieces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edit := tc.edit
			if edit == nil {
				edit = func(s string) string { return s }
			}
			events := sseEvents(t, tc.sse)
			for i := range events {
				events[i] = edit(events[i])
			}
			wholeF := newFake(t, answer(200, edit(readTestdata(t, tc.whole))))
			streamF := newFake(t, streaming(endNormally, events...))
			var whole llm.Provider
			var streamer llm.Streamer
			if tc.openAI {
				whole, streamer = newTestOpenAI(t, wholeF, OpenAIConfig{APIKey: testKey}), newTestOpenAI(t, streamF, OpenAIConfig{APIKey: testKey})
			} else {
				whole, streamer = newTestAnthropic(t, wholeF, AnthropicConfig{}), newTestAnthropic(t, streamF, AnthropicConfig{})
			}

			completed, err := whole.Complete(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var pieces collect
			streamed, err := streamer.Stream(t.Context(), tc.req, pieces.add)
			if err != nil {
				t.Fatal(err)
			}
			assertReply(t, streamed, tc.want)
			assertReply(t, streamed, completed)
			if !reflect.DeepEqual([]string(pieces), tc.wantPieces) {
				t.Errorf("pieces %q, want %q", pieces, tc.wantPieces)
			}
			if got := strings.Join(pieces, ""); got != streamed.Message.Content {
				t.Errorf("pieces add up to %q, the reply's text is %q", got, streamed.Message.Content)
			}
			if tc.exactToolArg {
				for i, c := range streamed.Message.ToolCalls {
					if string(c.Args) != string(tc.want.Message.ToolCalls[i].Args) {
						t.Errorf("call %d args %s, want the model's exact text %s", i, c.Args, tc.want.Message.ToolCalls[i].Args)
					}
				}
			}

			// The same request, but for the stream's fields.
			var wholeBody, streamBody map[string]any
			if err := json.Unmarshal(wholeF.only(t).Body, &wholeBody); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(streamF.only(t).Body, &streamBody); err != nil {
				t.Fatal(err)
			}
			if streamBody["stream"] != true {
				t.Errorf("stream is %v, want true", streamBody["stream"])
			}
			delete(streamBody, "stream")
			if tc.openAI {
				if so := streamBody["stream_options"]; !reflect.DeepEqual(so, map[string]any{"include_usage": true}) {
					t.Errorf("stream_options %v, want include_usage true", so)
				}
				delete(streamBody, "stream_options")
			}
			if !reflect.DeepEqual(streamBody, wholeBody) {
				s, _ := json.Marshal(streamBody)
				w, _ := json.Marshal(wholeBody)
				t.Errorf("the streamed request differs from Complete's\nstream:   %s\ncomplete: %s", s, w)
			}
		})
	}
}

// TestStreamHTTPErrors: an error status before the stream starts is the
// error Complete returns for it, and no text is delivered.
func TestStreamHTTPErrors(t *testing.T) {
	t.Parallel()
	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		runErrorCases(t, openAIErrorCases(), func(t *testing.T, f *fake) error {
			var pieces collect
			_, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Stream(t.Context(), userOnly, pieces.add)
			if len(pieces) != 0 {
				t.Errorf("text delivered from an error: %q", pieces)
			}
			return err
		})
	})
	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		runErrorCases(t, anthropicErrorCases(), func(t *testing.T, f *fake) error {
			var pieces collect
			_, err := newTestAnthropic(t, f, AnthropicConfig{}).Stream(t.Context(), userOnly, pieces.add)
			if len(pieces) != 0 {
				t.Errorf("text delivered from an error: %q", pieces)
			}
			return err
		})
	})
}

// TestStreamErrorEvents: an error event after two pieces of text ends the
// stream with the class of the HTTP error of its kind, and no reply.
func TestStreamErrorEvents(t *testing.T) {
	t.Parallel()
	openAIEvent := func(body string) string { return "data: " + body + "\n\n" }
	anthropicEvent := func(typ, msg string) string {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return "event: error\ndata: " + string(b) + "\n\n"
	}
	adapters := streamAdapters()
	for _, tc := range []struct {
		name    string
		adapter streamAdapter
		event   string
		want    llm.Error
	}{
		{"openai server_error", adapters[0],
			openAIEvent(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`),
			llm.Error{Class: llm.ClassServer, Message: "error event in the stream: The server had an error while processing your request. Sorry about that!"}},
		{"openai rate limit", adapters[0],
			openAIEvent(`{"error":{"message":"Rate limit reached.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
			llm.Error{Class: llm.ClassRateLimit, Message: "error event in the stream: Rate limit reached."}},
		{"openai invalid key", adapters[0],
			openAIEvent(`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			llm.Error{Class: llm.ClassAuth, Message: "error event in the stream: Incorrect API key provided."}},
		{"openai model not found", adapters[0],
			openAIEvent(`{"error":{"message":"The model does not exist.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
			llm.Error{Class: llm.ClassNotFound, Message: "error event in the stream: The model does not exist."}},
		{"openai context length", adapters[0],
			openAIEvent(`{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			llm.Error{Class: llm.ClassContextLength, Message: "error event in the stream: the conversation is longer than the model's context window: This model's maximum context length is 128000 tokens."}},
		{"openai bad request", adapters[0],
			openAIEvent(`{"error":{"message":"Invalid 'tools[0].function.name'.","type":"invalid_request_error","param":null,"code":null}}`),
			llm.Error{Class: llm.ClassBadRequest, Message: "error event in the stream: Invalid 'tools[0].function.name'."}},
		{"vllm numeric code", adapters[0],
			openAIEvent(`{"error":{"object":"error","message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}}`),
			llm.Error{Class: llm.ClassServer, Message: "error event in the stream: CUDA out of memory"}},
		{"openai error event of no known kind", adapters[0],
			"event: error\ndata: {\"message\":\"worker lost\"}\n\n",
			llm.Error{Class: llm.ClassServer, Message: "error event in the stream: worker lost"}},
		{"anthropic overloaded", adapters[1], anthropicEvent("overloaded_error", "Overloaded"),
			llm.Error{Class: llm.ClassServer, Message: "error event in the stream: Overloaded"}},
		{"anthropic api_error", adapters[1], anthropicEvent("api_error", "Internal server error"),
			llm.Error{Class: llm.ClassServer, Message: "error event in the stream: Internal server error"}},
		{"anthropic rate limit", adapters[1], anthropicEvent("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
			llm.Error{Class: llm.ClassRateLimit, Message: "error event in the stream: Number of request tokens has exceeded your per-minute rate limit"}},
		{"anthropic prompt too long", adapters[1], anthropicEvent("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
			llm.Error{Class: llm.ClassContextLength, Message: "error event in the stream: the conversation is longer than the model's context window: prompt is too long: 208310 tokens > 200000 maximum"}},
		{"anthropic authentication", adapters[1], anthropicEvent("authentication_error", "invalid x-api-key"),
			llm.Error{Class: llm.ClassAuth, Message: "error event in the stream: invalid x-api-key"}},
		{"anthropic not found", adapters[1], anthropicEvent("not_found_error", "model: claude-nonexistent-1"),
			llm.Error{Class: llm.ClassNotFound, Message: "error event in the stream: model: claude-nonexistent-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			events := append(sseEvents(t, tc.adapter.text)[:tc.adapter.throughSecond], tc.event)
			f := newFake(t, streaming(endNormally, events...))
			var pieces collect
			got, err := tc.adapter.new(t, f, 0).Stream(t.Context(), userOnly, pieces.add)
			if e := asError(t, err); *e != tc.want {
				t.Errorf("error\ngot:  %#v\nwant: %#v", *e, tc.want)
			}
			assertReply(t, got, agent.ModelReply{})
			if !reflect.DeepEqual([]string(pieces), textPieces[:2]) {
				t.Errorf("pieces %q, want the two before the error, %q", pieces, textPieces[:2])
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("server got %d requests, want exactly 1", n)
			}
		})
	}
}

// TestStreamCut: a stream that ends before its last event is a retryable
// llm.ClassNetwork error, whatever text it delivered, never a reply.
func TestStreamCut(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		for _, tc := range []struct {
			name   string
			end    streamEnd
			events func([]string) []string
			pieces []string
		}{
			{"ends after two pieces", endNormally, func(e []string) []string { return e[:a.throughSecond] }, textPieces[:2]},
			{"dropped after two pieces", endAbort, func(e []string) []string { return e[:a.throughSecond] }, textPieces[:2]},
			// all the text and the finish reason, not [DONE] or message_stop
			{"ends before the last event", endNormally, func(e []string) []string { return e[:len(e)-1] }, textPieces},
			{"dropped before the last event", endAbort, func(e []string) []string { return e[:len(e)-1] }, textPieces},
		} {
			t.Run(a.name+" "+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, streaming(tc.end, tc.events(sseEvents(t, a.text))...))
				var pieces collect
				got, err := a.new(t, f, 0).Stream(t.Context(), userOnly, pieces.add)
				e := asError(t, err)
				if e.Class != llm.ClassNetwork || !e.Class.Retryable() {
					t.Errorf("error %#v, want class %s", *e, llm.ClassNetwork)
				}
				assertReply(t, got, agent.ModelReply{})
				if !reflect.DeepEqual([]string(pieces), tc.pieces) {
					t.Errorf("pieces %q, want %q", pieces, tc.pieces)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("server got %d requests, want exactly 1", n)
				}
			})
		}
	}
}

// TestStreamTimeout: the request timeout bounds the whole stream, not only
// its start: a stream that stalls after two pieces ends with llm.ClassTimeout.
func TestStreamTimeout(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			const timeout = 300 * time.Millisecond
			f := newFake(t, streaming(endStall, sseEvents(t, a.text)[:a.throughSecond]...))
			var pieces collect
			began := time.Now()
			got, err := a.new(t, f, timeout).Stream(t.Context(), userOnly, pieces.add)
			took := time.Since(began)
			if e := asError(t, err); e.Class != llm.ClassTimeout || !strings.Contains(e.Message, "300ms") {
				t.Errorf("error %#v, want class %s naming the timeout", *e, llm.ClassTimeout)
			}
			if took < timeout || took > 10*time.Second {
				t.Errorf("the stream ended after %v, want soon after %v", took, timeout)
			}
			assertReply(t, got, agent.ModelReply{})
			if !reflect.DeepEqual([]string(pieces), textPieces[:2]) {
				t.Errorf("pieces %q, want %q", pieces, textPieces[:2])
			}
		})
	}
}

// TestStreamCancellation: the caller's cancellation mid-stream comes back
// as the context's error, not as an *llm.Error.
func TestStreamCancellation(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, streaming(endStall, sseEvents(t, a.text)[:a.throughSecond]...))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var pieces collect
			got, err := a.new(t, f, 0).Stream(ctx, userOnly, func(s string) {
				pieces.add(s)
				if len(pieces) == 2 {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want %v", err, context.Canceled)
			}
			var e *llm.Error
			if errors.As(err, &e) {
				t.Errorf("cancellation came back as %#v, want the context's error", *e)
			}
			assertReply(t, got, agent.ModelReply{})
			if len(pieces) != 2 {
				t.Errorf("pieces %q, want 2", pieces)
			}
		})
	}
}

// TestOpenAIStreamRefusal: a refusal, which is the reply's text when there
// is no content, is delivered whole at the end.
func TestOpenAIStreamRefusal(t *testing.T) {
	t.Parallel()
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	f := newFake(t, streaming(endNormally,
		chunk(`{"role":"assistant","content":null,"refusal":""}`, "null"),
		chunk(`{"refusal":"I can't help"}`, "null"),
		chunk(`{"refusal":" with that."}`, "null"),
		chunk(`{}`, `"stop"`),
		"data: [DONE]\n\n"))
	var pieces collect
	got, err := newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}).Stream(t.Context(), userOnly, pieces.add)
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != "I can't help with that." || got.FinishReason != agent.FinishStop {
		t.Errorf("reply %+v, want the refusal as text", got)
	}
	if !reflect.DeepEqual([]string(pieces), []string{"I can't help with that."}) {
		t.Errorf("pieces %q, want the refusal whole", pieces)
	}
}

// TestStreamBrokenEvents: an event that is not what the protocol says is
// a llm.ClassServer error.
func TestStreamBrokenEvents(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			events := append(sseEvents(t, a.text)[:a.throughSecond], "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": [\n\n")
			f := newFake(t, streaming(endNormally, events...))
			got, err := a.new(t, f, 0).Stream(t.Context(), userOnly, func(string) {})
			if e := asError(t, err); e.Class != llm.ClassServer || e.StatusCode != 200 {
				t.Errorf("error %#v, want class %s with status 200", *e, llm.ClassServer)
			}
			assertReply(t, got, agent.ModelReply{})
		})
	}
}

// TestStreamKeyNeverShown: an error event that echoes the request's
// credentials comes back scrubbed.
func TestStreamKeyNeverShown(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "upstream saw " + r.Header.Get("Authorization")}})
				streaming(endNormally, sseEvents(t, a.text)[0], "event: error\ndata: "+string(b)+"\n\n")(w, r)
			})
			_, err := a.new(t, f, 0).Stream(t.Context(), userOnly, func(string) {})
			e := asError(t, err)
			if s := fmt.Sprintf("%v %+v %#v %s", err, err, err, e.Message); strings.Contains(s, testKey) {
				t.Fatalf("the error shows the key: %s", s)
			}
			if e.Class != llm.ClassServer || e.Message != "error event in the stream: upstream saw Bearer [redacted]" {
				t.Errorf("error %#v, want class %s with the echoed header scrubbed", *e, llm.ClassServer)
			}
		})
	}
}

// TestStreamNilText: a nil text callback streams the answer and delivers
// nothing.
func TestStreamNilText(t *testing.T) {
	t.Parallel()
	for _, a := range streamAdapters() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, streaming(endNormally, sseEvents(t, a.text)...))
			got, err := a.new(t, f, 0).Stream(t.Context(), userOnly, nil)
			if err != nil || got.Message.Content != strings.Join(textPieces, "") {
				t.Fatalf("reply %+v, %v; want the text answer", got, err)
			}
		})
	}
	got, err := llm.NewScripted(llm.Script{Turns: []llm.Turn{{Text: "one two three four"}}}).Stream(t.Context(), userOnly, nil)
	if err != nil || got.Message.Content != "one two three four" {
		t.Fatalf("scripted: %+v, %v", got, err)
	}
}

// TestStreamFromServerThatDoesNotStream: a compatible server that ignores
// the request to stream and answers whole (JSON) gives the reply Complete
// gives, its text in one piece.
func TestStreamFromServerThatDoesNotStream(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, answer string
		new          func(f *fake) llm.Streamer
	}{
		{"openai", "openai_text.json", func(f *fake) llm.Streamer { return newTestOpenAI(t, f, OpenAIConfig{APIKey: testKey}) }},
		{"anthropic", "anthropic_text.json", func(f *fake) llm.Streamer { return newTestAnthropic(t, f, AnthropicConfig{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.new(newFake(t, answer(200, readTestdata(t, c.answer))))
			var pieces collect
			got, err := p.Stream(t.Context(), userOnly, pieces.add)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			want, err := p.Complete(t.Context(), userOnly)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || len(pieces) != 1 || pieces[0] != want.Message.Content {
				t.Fatalf("reply %+v in pieces %q; want %+v in one piece", got, pieces, want)
			}
		})
	}
}

// TestScriptedStream: Stream returns the reply Complete returns, and
// delivers a text turn's text in pieces of three words; a tool-call turn
// delivers none.
func TestScriptedStream(t *testing.T) {
	t.Parallel()
	conv := []agent.Message{
		{Role: agent.RoleUser, Content: hand.Prompt},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_1_0", Name: "lookup"}}},
		{Role: agent.RoleTool, ToolCallID: "call_1_0", Content: "Access policy: ..."},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_2_0", Name: "create_ticket"}}},
		{Role: agent.RoleTool, ToolCallID: "call_2_0", Content: "TICKET-1"},
	}
	for _, tc := range []struct {
		name   string
		msgs   []agent.Message
		pieces []string
	}{
		{"text", conv, []string{"Your request is ", "filed as TICKET-1. ", "The data owner ", "will review it; ", "access is granted ", "for 90 days."}},
		{"tool calls", conv[:1], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := llm.NewScripted(llm.HandExample())
			req := agent.ModelRequest{Messages: tc.msgs}
			want, err := p.Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			var pieces collect
			got, err := p.Stream(t.Context(), req, pieces.add)
			if err != nil {
				t.Fatal(err)
			}
			assertReply(t, got, want)
			if !reflect.DeepEqual([]string(pieces), tc.pieces) {
				t.Errorf("pieces %q, want %q", pieces, tc.pieces)
			}
			if s := strings.Join(pieces, ""); s != got.Message.Content {
				t.Errorf("pieces add up to %q, the reply's text is %q", s, got.Message.Content)
			}
		})
	}
	t.Run("no turn left", func(t *testing.T) {
		t.Parallel()
		_, err := llm.NewScripted(llm.Script{Turns: []llm.Turn{{Text: "hi"}}}).Stream(t.Context(), agent.ModelRequest{Messages: conv}, func(string) { t.Error("text from a failed call") })
		if e := asError(t, err); e.Class != llm.ClassBadRequest {
			t.Errorf("error %#v, want class %s", *e, llm.ClassBadRequest)
		}
	})
}
