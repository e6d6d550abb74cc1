package providers

import (
	"github.com/agentrun/agentrun/llm"

	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentrun/agentrun/agent"
)

// OpenAIConfig configures the OpenAI provider: the Chat Completions API of
// OpenAI or of any compatible server (vLLM, Ollama, llama.cpp server, LM
// Studio). Its String, GoString and LogValue never show the key.
type OpenAIConfig struct {
	// Model is the model the server runs, e.g. "gpt-4o-mini". Required.
	Model string
	// APIKey is sent as a bearer token. Required unless BaseURL is set: a
	// local server may need no key. Default: none.
	APIKey string `json:"-"`
	// BaseURL is the API root the paths are relative to, e.g.
	// "http://localhost:11434/v1". Default: https://api.openai.com/v1/.
	BaseURL string
	// Organization and Project are sent as the OpenAI-Organization and
	// OpenAI-Project headers when set. Default: not sent.
	Organization string
	Project      string
	// MaxTokens caps the tokens of a reply (max_completion_tokens), from
	// AGENTRUN_MAX_TOKENS; Settings.MaxTokens is the other way to set it,
	// and setting both is an error. Default 0: not sent, the server's own
	// limit applies (a fixed default would make a small local model reject
	// every long prompt).
	MaxTokens int64
	// Timeout bounds one request answered whole, and the whole of a
	// streamed answer. Default 0: llm.DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds each silence of a streamed answer: the wait for
	// its first piece and between two pieces. Default 0:
	// llm.DefaultIdleTimeout; at most Timeout.
	IdleTimeout time.Duration
	// Settings are sent with every request (temperature as temperature,
	// max_tokens as max_completion_tokens, reasoning_effort, extra fields
	// at the top level of the body) and recorded in every reply. Default:
	// none.
	Settings agent.ModelSettings
	// HTTPClient sends the requests. Default: the SDK's client.
	HTTPClient *http.Client
}

func (c OpenAIConfig) validate() error {
	if c.Model == "" {
		return fmt.Errorf("openai: no model: want openai:MODEL, e.g. openai:gpt-4o-mini")
	}
	if c.BaseURL == "" && c.APIKey == "" {
		return fmt.Errorf("openai: no API key: set OPENAI_API_KEY, or set OPENAI_BASE_URL to a server that needs no key")
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf("openai: MaxTokens is %d: want a positive number of tokens, or 0 for the server's limit", c.MaxTokens)
	}
	return c.common().check()
}

func (c OpenAIConfig) common() common {
	return common{"openai", c.Model, c.APIKey, c.BaseURL, "OPENAI_BASE_URL", c.MaxTokens, c.Timeout, c.IdleTimeout, c.Settings}
}

// String describes the configuration without its key.
func (c OpenAIConfig) String() string { return c.common().String() }

// GoString is String: %#v must not print the key either.
func (c OpenAIConfig) GoString() string { return c.String() }

// LogValue keeps the key out of structured logs.
func (c OpenAIConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// OpenAI answers model steps through the Chat Completions API, with tool
// calls. It makes exactly one HTTP request per Complete or Stream: the
// SDK's retries are off, the engine retries by the class of the returned
// *llm.Error. It never logs. It is safe for concurrent use.
type OpenAI struct {
	base // its settings with the effective max tokens
	chat openai.ChatCompletionService
}

var _ llm.Streamer = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI provider. It reads no environment variable:
// New gets its account settings from the configuration.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cmp.Or(cfg.BaseURL, "https://api.openai.com/v1/")),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.Organization != "" {
		opts = append(opts, option.WithOrganization(cfg.Organization))
	}
	if cfg.Project != "" {
		opts = append(opts, option.WithProject(cfg.Project))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	// The service, not openai.NewClient: the client would also read
	// OPENAI_* variables from the process environment behind our back.
	settings := cfg.Settings
	settings.MaxTokens = cmp.Or(settings.MaxTokens, cfg.MaxTokens)
	return &OpenAI{base: cfg.common().base(settings), chat: openai.NewChatCompletionService(opts...)}, nil
}

// Complete implements llm.Provider. Every error is an *llm.Error, except the
// caller's cancellation, which comes back wrapped as it is.
func (p *OpenAI) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	// Decoded whatever its content type (see complete).
	return complete(ctx, p.base, "a chat completion", func(ctx context.Context, res **http.Response, body *[]byte) error {
		_, err := p.chat.New(ctx, params, option.WithResponseInto(res), option.WithResponseBodyInto(body))
		return err
	}, p.reply)
}

// Stream implements Streamer: one streamed request (stream_options
// include_usage, so that the last chunk reports the usage), each content
// delta of the first choice passed to text, the chunks rebuilt into a chat
// completion by the SDK's accumulator and converted as Complete converts
// its answer. A refusal, which Complete returns as the text when there is
// no content, is passed to text whole at the end. Only a stream that
// reached [DONE] counts: one that ends before it is a llm.ClassNetwork error,
// an error chunk is classified as the HTTP error of its kind (eventError).
// The idle timeout bounds each wait for a piece of the answer (any chunk:
// text, tool-call arguments, the finish reason or the usage), the request
// timeout the whole stream.
func (p *OpenAI) Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error) {
	if text == nil {
		text = func(string) {}
	}
	params, err := p.params(req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	var res *http.Response
	w := streamWatch(ctx, p.timeout, p.idle)
	defer w.stop()
	stream := p.chat.NewStreaming(w.rctx, params, option.WithResponseInto(&res))
	defer stream.Close()
	noteLeft(ctx, res)
	if err := stream.Err(); err != nil {
		return agent.ModelReply{}, callError(w, p.Name(), err, res, p.scrub)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		// A compatible server that does not stream answers whole (JSON,
		// whatever content type it names): the answer is the same, its
		// text comes in one piece.
		w.answeredWhole()
		return unstreamed(w, p.base, res, "a chat completion", p.reply, text)
	}
	// The events are read with the SDK's decoder rather than its Stream,
	// which ends alike on [DONE] and on a body that stops early: only the
	// first is a whole answer.
	dec := ssestream.NewDecoder(res)
	var acc openai.ChatCompletionAccumulator
	done := false
	for !done && dec.Next() {
		w.piece()
		ev := dec.Event()
		data := bytes.TrimSpace(ev.Data)
		var probe struct {
			Error json.RawMessage `json:"error"`
		}
		switch {
		case bytes.HasPrefix(data, []byte("[DONE]")):
			done = true
		case ev.Type == "error" || (json.Unmarshal(data, &probe) == nil && len(probe.Error) > 0 && string(probe.Error) != "null"):
			return agent.ModelReply{}, eventError(data, p.scrub)
		default:
			var chunk openai.ChatCompletionChunk
			if err := json.Unmarshal(data, &chunk); err != nil {
				return agent.ModelReply{}, &llm.Error{Class: llm.ClassServer, StatusCode: statusOf(res), Message: p.scrub("a chunk of the stream is not a chat completion chunk: " + err.Error())}
			}
			if !acc.AddChunk(chunk) {
				return agent.ModelReply{}, &llm.Error{Class: llm.ClassServer, StatusCode: statusOf(res), Message: "the stream's chunks do not add up to one chat completion"}
			}
			for _, ch := range chunk.Choices {
				if ch.Index == 0 && ch.Delta.Content != "" {
					text(ch.Delta.Content)
				}
			}
		}
	}
	if err := dec.Err(); err != nil {
		return agent.ModelReply{}, callError(w, p.Name(), err, res, p.scrub)
	}
	if !done {
		return agent.ModelReply{}, callError(w, p.Name(), fmt.Errorf("the stream ended before [DONE]: %w", io.ErrUnexpectedEOF), res, p.scrub)
	}
	r, err := p.reply(acc.ChatCompletion, statusOf(res))
	if err != nil {
		return agent.ModelReply{}, err
	}
	if c := acc.Choices[0].Message; c.Content == "" && c.Refusal != "" {
		text(c.Refusal)
	}
	return r, nil
}

// reply converts a chat completion, answered whole or rebuilt from a
// stream, to the agent's reply. status is the HTTP status it came with.
func (p *OpenAI) reply(c openai.ChatCompletion, status int) (agent.ModelReply, error) {
	if len(c.Choices) == 0 {
		return agent.ModelReply{}, &llm.Error{Class: llm.ClassServer, StatusCode: status, Message: "the server's answer has no choices"}
	}
	if err := checkUsage(status, c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.PromptTokensDetails.CachedTokens); err != nil {
		return agent.ModelReply{}, err
	}
	ch := c.Choices[0]
	msg := agent.Message{Role: agent.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" {
		msg.Content = ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" { // some compatible servers leave it out
			id = fmt.Sprintf("call_%d", i)
		}
		msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: id, Name: tc.Function.Name, Args: toolArgs(tc.Function.Arguments)})
	}
	return agent.ModelReply{
		Message:      msg,
		FinishReason: ch.FinishReason, // OpenAI's names are the agent's: stop, tool_calls, length
		// cached_tokens is the part of prompt_tokens read from the prompt
		// cache; OpenAI caches on its own and reports no writes.
		Usage: agent.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens,
			CacheReadTokens: c.Usage.PromptTokensDetails.CachedTokens},
		Model:    p.Name(),
		Settings: llm.SentSettings(p.settings),
	}, nil
}

// params maps a model request to the wire.
func (p *OpenAI) params(req agent.ModelRequest) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: p.model}
	st := p.settings
	if st.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(st.MaxTokens)
	}
	if st.Temperature != nil {
		params.Temperature = openai.Float(*st.Temperature)
	}
	if st.TopP != nil {
		params.TopP = openai.Float(*st.TopP)
	}
	if st.Seed != nil {
		params.Seed = openai.Int(*st.Seed)
	}
	if st.ReasoningEffort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(st.ReasoningEffort)
	}
	if x := extraFields(st); x != nil {
		params.SetExtraFields(x)
	}
	for i, m := range req.Messages {
		switch m.Role {
		case agent.RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case agent.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case agent.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Args)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case agent.RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return params, &llm.Error{Class: llm.ClassBadRequest, Message: fmt.Sprintf("message %d has role %q: want system, user, assistant or tool", i, m.Role)}
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaFields(t)
		if err != nil {
			return params, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters{}}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		for k, v := range schema {
			fn.Parameters[k] = v
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

// emptySchema is the schema of a tool that takes no arguments.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaFields splits a tool's JSON schema into its top-level fields, each
// kept as the exact JSON it came as. No schema means no arguments.
func schemaFields(t agent.ToolSpec) (map[string]json.RawMessage, error) {
	s := t.Schema
	if len(strings.TrimSpace(string(s))) == 0 || strings.TrimSpace(string(s)) == "null" {
		s = emptySchema
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(s, &fields); err != nil || fields == nil {
		return nil, &llm.Error{Class: llm.ClassBadRequest, Message: fmt.Sprintf("tool %s: the schema of its arguments is not a JSON object", t.Name)}
	}
	return fields, nil
}

// toolArgs keeps a tool call's arguments as JSON. Arguments that are not
// valid JSON (models do produce them) become a JSON string, so the tool
// reports an error to the model instead of the run failing.
func toolArgs(s string) json.RawMessage {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
