package providers

import (
	"github.com/agentrun/agentrun/llm"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agentrun/agentrun/agent"
)

// DefaultMaxTokens caps an Anthropic reply when AGENTRUN_MAX_TOKENS is not
// set: the Messages API requires a cap.
const DefaultMaxTokens = 4096

// AnthropicConfig configures the Anthropic provider (the Messages API). Its
// String, GoString and LogValue never show the key.
type AnthropicConfig struct {
	// Model is the model to call, e.g. "claude-sonnet-4-5". Required.
	Model string
	// APIKey authenticates the calls. Required.
	APIKey string `json:"-"`
	// BaseURL is the API root, without /v1. Default: https://api.anthropic.com/.
	BaseURL string
	// MaxTokens caps the tokens of a reply (max_tokens), from
	// AGENTRUN_MAX_TOKENS; Settings.MaxTokens is the other way to set it,
	// and setting both is an error. Default 4096 (DefaultMaxTokens).
	MaxTokens int64
	// Timeout bounds one request answered whole, and the whole of a
	// streamed answer. Default 0: llm.DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds each silence of a streamed answer: the wait for
	// its first piece and between two pieces. Default 0:
	// llm.DefaultIdleTimeout; at most Timeout.
	IdleTimeout time.Duration
	// Settings are sent with every request (reasoning_effort as
	// output_config.effort, extra fields at the top level of the body)
	// and recorded in every reply, with the max tokens sent. Default: none.
	Settings agent.ModelSettings
	// HTTPClient sends the requests. Default: the SDK's client.
	HTTPClient *http.Client
}

func (c AnthropicConfig) withDefaults() AnthropicConfig {
	if c.MaxTokens == 0 && c.Settings.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	return c
}

// maxTokens is the cap sent with every request.
func (c AnthropicConfig) maxTokens() int64 { return max(c.MaxTokens, c.Settings.MaxTokens) }

func (c AnthropicConfig) validate() error {
	if c.Model == "" {
		return fmt.Errorf("anthropic: no model: want anthropic:MODEL, e.g. anthropic:claude-sonnet-4-5")
	}
	if c.APIKey == "" {
		return fmt.Errorf("anthropic: no API key: set ANTHROPIC_API_KEY")
	}
	if c.MaxTokens < 0 || c.maxTokens() <= 0 {
		return fmt.Errorf("anthropic: MaxTokens is %d: want a positive number of tokens", c.MaxTokens)
	}
	if err := c.common().check(); err != nil {
		return err
	}
	// The SDK refuses a non-streaming call that may outlast ten minutes;
	// say so now rather than on every model step.
	if _, err := anthropic.CalculateNonStreamingTimeout(int(c.maxTokens()), c.Model, nil); err != nil {
		return fmt.Errorf("anthropic: max tokens %d is too many for one non-streaming call to %s (%v): lower AGENTRUN_MAX_TOKENS or max_tokens in the models file", c.maxTokens(), c.Model, err)
	}
	return nil
}

func (c AnthropicConfig) common() common {
	return common{"anthropic", c.Model, c.APIKey, c.BaseURL, "ANTHROPIC_BASE_URL", c.MaxTokens, c.Timeout, c.IdleTimeout, c.Settings}
}

// String describes the configuration without its key.
func (c AnthropicConfig) String() string { return c.common().String() }

// GoString is String: %#v must not print the key either.
func (c AnthropicConfig) GoString() string { return c.String() }

// LogValue keeps the key out of structured logs.
func (c AnthropicConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Anthropic answers model steps through the Messages API, with tool use. It
// makes exactly one HTTP request per Complete or Stream: the SDK's retries
// are off, the engine retries by the class of the returned *llm.Error. It
// never logs, and its OpenTelemetry spans (if an application registers a
// tracer) never carry the conversation. It is safe for concurrent use.
type Anthropic struct {
	base   // its settings with the max tokens sent
	client anthropic.Client
}

var _ llm.Streamer = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic provider. It reads no environment
// variable: New gets its account settings from the configuration.
func NewAnthropic(cfg AnthropicConfig) (*Anthropic, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // no ANTHROPIC_* read behind our back
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	settings := cfg.Settings
	settings.MaxTokens = cfg.maxTokens()
	return &Anthropic{base: cfg.common().base(settings), client: anthropic.NewClient(opts...)}, nil
}

// Complete implements llm.Provider. Every error is an *llm.Error, except the
// caller's cancellation, which comes back wrapped as it is.
func (p *Anthropic) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	return complete(ctx, p.base, "a message", func(ctx context.Context, res **http.Response, body *[]byte) error {
		_, err := p.client.Messages.New(ctx, params, option.WithResponseInto(res), option.WithResponseBodyInto(body))
		return err
	}, p.reply)
}

// Stream implements Streamer: one streamed request, each text_delta passed
// to text, the events accumulated into a message by the SDK
// (Message.Accumulate) and converted as Complete converts its answer. Only
// a stream that reached message_stop counts: one that ends before it is a
// llm.ClassNetwork error, an error event (overloaded_error, api_error, ...) is
// classified as the HTTP error of its kind (eventError). The idle timeout
// bounds each wait for an event other than ping, the request timeout the
// whole stream.
func (p *Anthropic) Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error) {
	if text == nil {
		text = func(string) {}
	}
	params, err := p.params(req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	var res *http.Response
	w := streamWatch(ctx, p.timeout, p.idle)
	defer w.stop()
	stream := p.client.Messages.NewStreaming(w.rctx, params, option.WithResponseInto(&res))
	defer stream.Close()
	noteLeft(ctx, res)
	if err := stream.Err(); err != nil {
		return agent.ModelReply{}, callError(w, p.Name(), err, res, p.scrub)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		// A compatible server that does not stream answers whole: the
		// answer is the same, its text comes in one piece.
		w.answeredWhole()
		return unstreamed(w, p.base, res, "a message", p.reply, text)
	}
	var m anthropic.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if ev.Type != "ping" {
			w.piece()
		}
		if err := m.Accumulate(ev); err != nil {
			return agent.ModelReply{}, &llm.Error{Class: llm.ClassServer, StatusCode: statusOf(res), Message: p.scrub("the stream's events do not add up to one message: " + err.Error())}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				text(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		// The SDK makes an error event an *anthropic.Error holding the
		// event's data; the caller's cancellation and the timeout come
		// first, as in callError.
		var ae *anthropic.Error
		if errors.As(err, &ae) && w.ctx.Err() == nil && w.rctx.Err() == nil {
			return agent.ModelReply{}, eventError([]byte(ae.RawJSON()), p.scrub)
		}
		return agent.ModelReply{}, callError(w, p.Name(), err, res, p.scrub)
	}
	if !stopped {
		return agent.ModelReply{}, callError(w, p.Name(), fmt.Errorf("the stream ended before message_stop: %w", io.ErrUnexpectedEOF), res, p.scrub)
	}
	return p.reply(m, statusOf(res))
}

// reply converts a message, answered whole or accumulated from a stream,
// to the agent's reply. status is the HTTP status it came with. A reply
// with a negative token count is refused (checkUsage).
func (p *Anthropic) reply(m anthropic.Message, status int) (agent.ModelReply, error) {
	u := m.Usage
	if err := checkUsage(status, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens); err != nil {
		return agent.ModelReply{}, err
	}
	msg := agent.Message{Role: agent.RoleAssistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := b.Input
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage(`{}`)
			}
			// A streamed input is the model's text put together; keep
			// it JSON, as toolArgs does for OpenAI's arguments.
			msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: b.ID, Name: b.Name, Args: toolArgs(string(args))})
		}
		// thinking and server-tool blocks carry nothing the agent uses
	}
	msg.Content = text.String()
	return agent.ModelReply{
		Message:      msg,
		FinishReason: anthropicFinish(m.StopReason),
		// Cached prompt tokens are counted apart from input_tokens; the
		// agent's InputTokens is the whole prompt, as OpenAI's is, and
		// the cache's reads and writes are parts of it.
		Usage: agent.Usage{
			InputTokens:      u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		},
		Model:    p.Name(),
		Settings: llm.SentSettings(p.settings),
	}, nil
}

// anthropicFinish maps a stop_reason to the agent's finish reasons; others
// pass through.
func anthropicFinish(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonEndTurn:
		return agent.FinishStop
	case anthropic.StopReasonToolUse:
		return agent.FinishToolCalls
	case anthropic.StopReasonMaxTokens:
		return agent.FinishLength
	}
	return string(r)
}

// params maps a model request to the wire: system messages go to the
// system parameter; tool results are tool_result blocks of a user message,
// and consecutive user-side messages (tool results, user text) share one.
func (p *Anthropic) params(req agent.ModelRequest) (anthropic.MessageNewParams, error) {
	st := p.settings
	params := anthropic.MessageNewParams{Model: p.model, MaxTokens: st.MaxTokens}
	if st.ReasoningEffort != "" {
		params.OutputConfig.Effort = anthropic.OutputConfigEffort(st.ReasoningEffort)
	}
	// This SDK's params have no temperature or top_p: they go with the
	// extra fields, which the SDK merges into the body.
	x := extraFields(st)
	if x == nil {
		x = map[string]any{}
	}
	if st.Temperature != nil {
		x["temperature"] = *st.Temperature
	}
	if st.TopP != nil {
		x["top_p"] = *st.TopP
	}
	if len(x) > 0 {
		params.SetExtraFields(x)
	}
	var msgs []anthropic.MessageParam
	// user appends a block to the user message at the end, or opens one.
	user := func(b anthropic.ContentBlockParamUnion) {
		if n := len(msgs); n > 0 && msgs[n-1].OfUser != nil {
			msgs[n-1].OfUser.Content = append(msgs[n-1].OfUser.Content, b)
			return
		}
		msgs = append(msgs, anthropic.NewUserMessage(b))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case agent.RoleSystem:
			if m.Content != "" {
				params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case agent.RoleUser:
			user(anthropic.NewTextBlock(m.Content))
		case agent.RoleTool:
			r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" { // the API refuses an empty text block
				r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			if m.IsError {
				r.IsError = anthropic.Bool(true)
			}
			user(anthropic.ContentBlockParamUnion{OfToolResult: &r})
		case agent.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Args), tc.Name))
			}
			if len(blocks) > 0 { // the API refuses an empty assistant turn
				msgs = append(msgs, anthropic.NewAssistantMessage(blocks...))
			}
		default:
			return params, &llm.Error{Class: llm.ClassBadRequest, Message: fmt.Sprintf("message %d has role %q: want system, user, assistant or tool", i, m.Role)}
		}
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		fields, err := schemaFields(t)
		if err != nil {
			return params, err
		}
		// The schema goes as its fields, "type" always "object" (the API
		// takes nothing else), in the order of their names: the SDK would
		// add the fields it does not name (required,
		// additionalProperties, ...) in a map's random order, and the
		// tools, the start of the cached prompt, must be the same bytes
		// on every request.
		fields["type"] = json.RawMessage(`"object"`)
		schema := param.Override[anthropic.ToolInputSchemaParam](fields)
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	cacheBreakpoints(&params)
	return params, nil
}

// cacheBreakpoints marks the prompt cache's breakpoints (cache_control
// ephemeral), at most the four the API allows: the last tool, the last
// system block, the last block of the newest message, and the last block
// of the message before the newest assistant one. The API caches the
// prompt in the order tools, system, messages, each breakpoint the whole
// prefix up to it, so the tools and system prompt are read from the cache
// even when the conversation changes. The newest message's breakpoint
// rolls: the next request extends this one, and its breakpoint before the
// newest assistant message (the model's answer to this request) sits where
// this one's last did, so it reads this whole request from the cache,
// however many blocks the turn added (the API looks for a cached prefix
// only 20 blocks back from a breakpoint), and writes only what it adds. A
// breakpoint on a prefix shorter than the model's minimum (1024 tokens or
// more) is ignored by the API, not refused.
func cacheBreakpoints(params *anthropic.MessageNewParams) {
	mark := func(cc *anthropic.CacheControlEphemeralParam) {
		if cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	if n := len(params.Tools); n > 0 {
		mark(params.Tools[n-1].GetCacheControl())
	}
	if n := len(params.System); n > 0 {
		mark(&params.System[n-1].CacheControl)
	}
	last := func(m anthropic.MessageParam) {
		var blocks []anthropic.ContentBlockParamUnion
		switch {
		case m.OfUser != nil:
			blocks = m.OfUser.Content
		case m.OfAssistant != nil:
			blocks = m.OfAssistant.Content
		}
		if k := len(blocks); k > 0 {
			mark(blocks[k-1].GetCacheControl())
		}
	}
	n := len(params.Messages)
	if n == 0 {
		return
	}
	last(params.Messages[n-1])
	for i := n - 1; i > 0; i-- {
		if params.Messages[i].OfAssistant != nil {
			last(params.Messages[i-1])
			break
		}
	}
}

// toolInput is a recorded tool call's arguments as a tool_use input, which
// must be a JSON object.
func toolInput(args json.RawMessage) json.RawMessage {
	t := strings.TrimSpace(string(args))
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return json.RawMessage(`{}`)
}
