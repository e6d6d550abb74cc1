package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Role is who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// IsError marks a tool message that reports a failure to the model.
	IsError bool `json:"is_error,omitempty"`
	// ContentRef holds Content when it is too large to carry inline: the
	// text is in the content store and Content is empty.
	ContentRef *Ref `json:"content_ref,omitempty"`
	// Step names the step that produced a tool message, e.g.
	// "tool/2/0/lookup".
	Step string `json:"step,omitempty"`
}

// Text returns the message's content when it is inline, else the preview
// of its reference.
func (m Message) Text() string {
	if m.Content == "" && m.ContentRef != nil {
		return m.ContentRef.Preview
	}
	return m.Content
}

// TextKey is the identity of the message's text: its reference's key, or
// the key the content store would give its inline text ("sha256:" and
// the hex of its SHA-256), so that the same text compares equal whether it
// is carried inline or by reference.
func (m Message) TextKey() string {
	if m.ContentRef != nil {
		return m.ContentRef.Key
	}
	sum := sha256.Sum256([]byte(m.Content))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Recorded is the message as a conversation records it: a text kept by
// reference is not repeated inline. A model step's reply whose streamed
// answer the workflow took back from its stream holds both (see
// ModelReply.Message); the conversation carries only the reference.
func (m Message) Recorded() Message {
	if m.ContentRef != nil {
		m.Content = ""
	}
	return m
}

// Ref points at a value kept in the content store instead of inline: its
// key, its size in bytes, and the start of it for people to read.
type Ref struct {
	Key     string `json:"key"`
	Size    int    `json:"size"`
	Preview string `json:"preview,omitempty"`
}

// InlineLimit is the largest value (message text, tool arguments, a tool
// result) carried inline; larger ones live in the content store.
const InlineLimit = 1024

// PreviewLen is the length, in bytes, of a reference's preview.
const PreviewLen = 120

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsRef holds Args when they are too large to carry inline.
	ArgsRef *Ref `json:"args_ref,omitempty"`
	// Approval is what the worker's approval rule decided for this call
	// when the model asked for it (ApprovalAlways, ApprovalNever or
	// ApprovalDeny, in place of the tool's own Approval), recorded with the
	// reply so that a rule changed later never changes a run's past. ""
	// when the worker has no rule, or the rule left the call to its tool.
	// Only the model step's executor sets it (execute.Executor.Approve).
	Approval string `json:"approval,omitempty"`
}

// ToolResult is what a tool step returns to the model.
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// ContentRef holds Content when it is too large to carry inline.
	ContentRef *Ref `json:"content_ref,omitempty"`
	// Settled says how a write that was interrupted was settled without a
	// person; nil for every other result. The model does not see it.
	Settled *Settled `json:"settled,omitempty"`
	// Replayed marks the result of a call in a replay fork, where no tool
	// runs (Replay): the origin's step whose recorded result it is, or
	// ReplayedNone for a call the origin never made (an error result).
	// "" for every other result. The model does not see it.
	Replayed string `json:"replayed,omitempty"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	// InputTokens counts every input token of the request, those read
	// from or written to the provider's prompt cache included.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// the provider read from its prompt cache and wrote to it (OpenAI's
	// cached_tokens; Anthropic's cache_read_input_tokens and
	// cache_creation_input_tokens). 0 when the provider reports none.
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Cost is what the tokens cost, in US dollars, at the model's price
	// (Price) when the step ran: recorded with the step, so a later price
	// never changes it. 0 when the model has no price.
	Cost float64 `json:"cost,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens, Cost: u.Cost + o.Cost}
}

// Cached describes the prompt cache's part of the input for people: ""
// when the provider reported none, else e.g. "800 read from the cache,
// 120 written to it".
func (u Usage) Cached() string {
	switch {
	case u.CacheReadTokens > 0 && u.CacheWriteTokens > 0:
		return fmt.Sprintf("%d read from the cache, %d written to it", u.CacheReadTokens, u.CacheWriteTokens)
	case u.CacheReadTokens > 0:
		return fmt.Sprintf("%d read from the cache", u.CacheReadTokens)
	case u.CacheWriteTokens > 0:
		return fmt.Sprintf("%d written to the cache", u.CacheWriteTokens)
	}
	return ""
}

// Finish reasons a provider reports for a model turn.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// ModelRequest is what a provider answers: the whole conversation, with
// every value inline, and the tools on offer.
type ModelRequest struct {
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
}

// Conversation refers to the messages of a run: a chain of nodes in the
// content store (Head, the newest node's key; "" for none, holding Stored
// messages in all) followed by a few recent messages kept inline (Tail). Its
// size does not grow with the number of turns.
type Conversation struct {
	Head   string    `json:"head,omitempty"`
	Stored int       `json:"stored,omitempty"`
	Tail   []Message `json:"tail,omitempty"`
}

// Len is the number of messages in the conversation.
func (c Conversation) Len() int { return c.Stored + len(c.Tail) }

// ModelInput is the input of a model step: the conversation so far, the
// messages that follow it (tool results, or the run's input on the first
// turn), and the key of the tool specs on offer in the content store. It
// carries references, so it stays small whatever the turn.
type ModelInput struct {
	Conversation Conversation `json:"conversation"`
	New          []Message    `json:"new,omitempty"`
	// Tools is the content-store key of the JSON list of tool specs; ""
	// means the executor's own tools.
	Tools string `json:"tools,omitempty"`
}

// WithSystem returns msgs with their first system message's text replaced
// by system, or with system put first when they have none. msgs is not
// changed.
func WithSystem(msgs []Message, system string) []Message {
	out := make([]Message, 0, len(msgs)+1)
	for i, m := range msgs {
		if m.Role == RoleSystem {
			out = append(append(out, msgs[:i]...), Message{Role: RoleSystem, Content: system})
			return append(out, msgs[i+1:]...)
		}
	}
	return append(append(out, Message{Role: RoleSystem, Content: system}), msgs...)
}

// ModelReply is the recorded result of a model step.
type ModelReply struct {
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Usage        Usage   `json:"usage"`
	// Model names the provider and model that answered, e.g. "scripted".
	Model string `json:"model,omitempty"`
	// Conversation is the conversation after this reply when the step put
	// it in a new node of the store (a new Head). Nil when it stayed inline,
	// and in replies recorded before conversations were kept by reference:
	// it is then the step's input conversation with the step's new
	// messages and the reply appended to its tail, which the loop derives.
	// (Replies recorded before the tail was derived repeat it here.)
	Conversation *Conversation `json:"conversation,omitempty"`
	// Elided counts the oldest tool results left out of the request to fit
	// the model's context budget (each replaced by a marker).
	Elided int `json:"elided,omitempty"`
	// Settings are the request settings the model was asked with
	// (temperature, max tokens and so on); nil when none were sent, and in
	// replies recorded before settings were recorded.
	Settings *ModelSettings `json:"settings,omitempty"`
	// Streamed is the attempt of the step whose text was streamed as this
	// reply (the engine's attempt number); 0 when it was not streamed.
	// A streamed final answer whose step was asked for it
	// (activities.StepInput.TextInStream) is recorded by reference: its
	// text went to the run's stream and the store, and Message holds only
	// its ContentRef; the workflow takes the text back from its stream (or,
	// when that does not hold it, from the store) and keeps both.
	Streamed int `json:"streamed,omitempty"`
	// StreamTail is the end of a streamed answer recorded by reference
	// that the step did not publish (it kept it back for the run, which
	// publishes it when it records the reply, saving a publish signal);
	// "" otherwise.
	StreamTail string `json:"stream_tail,omitempty"`
}

// CutOff reports whether the reply is a final answer the model's length
// limit cut off: finish reason length and no tool calls.
func (r ModelReply) CutOff() bool {
	return r.FinishReason == FinishLength && len(r.Message.ToolCalls) == 0
}

// Empty reports whether the reply is a final answer with no text: no tool
// calls and nothing but white space (or nothing) in its content.
func (r ModelReply) Empty() bool {
	return len(r.Message.ToolCalls) == 0 && r.Message.ContentRef == nil && strings.TrimSpace(r.Message.Content) == ""
}

// ModelSettings are the settings of a model request besides the
// conversation and the tools: a zero field is not sent, and the server's
// default applies. Package llm reads them from the models file
// (AGENTRUN_MODELS), checks them per provider and sends them; each model
// step records them in its reply.
type ModelSettings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// MaxTokens caps the tokens of one reply.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// ReasoningEffort is the provider's reasoning effort, e.g. "low".
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Extra holds provider-specific top-level request fields, sent as
	// they are (e.g. llama.cpp's "top_k", vLLM's "repetition_penalty").
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	// Price is the model's price, which prices its replies (Usage.Cost).
	// It is no request setting: never sent, and not in String or IsZero.
	Price *Price `json:"price,omitempty"`
	// Limits are the provider account's rate limits, which every worker
	// of the fleet shares (package ratelimit). No request setting either.
	Limits *RateLimits `json:"limits,omitempty"`
}

// RateLimits are a provider account's rate limits, as a models file
// declares them; package ratelimit enforces them (ratelimit.Limit, the
// same fields).
type RateLimits struct {
	// Pool names the limits' shared state: models that declare the same
	// pool share one account's limits. Default "": the provider's name.
	Pool string `json:"pool,omitempty"`
	// RequestsPerMinute bounds the pool's calls in any minute. Default 0:
	// no bound on requests.
	RequestsPerMinute int64 `json:"requests_per_minute,omitempty"`
	// TokensPerMinute bounds the pool's tokens (input and output) in any
	// minute. Default 0: no bound on tokens.
	TokensPerMinute int64 `json:"tokens_per_minute,omitempty"`
}

// IsZero reports whether no setting is set.
func (s ModelSettings) IsZero() bool {
	return s.Temperature == nil && s.TopP == nil && s.Seed == nil && s.MaxTokens == 0 && s.ReasoningEffort == "" && len(s.Extra) == 0
}

// String renders the settings on one line for people, in a fixed order
// (extra fields by name), e.g. "temperature=0.2 max_tokens=1024
// extra={"top_k":40}"; "none" when no setting is set.
func (s ModelSettings) String() string {
	var parts []string
	if s.Temperature != nil {
		parts = append(parts, "temperature="+strconv.FormatFloat(*s.Temperature, 'g', -1, 64))
	}
	if s.TopP != nil {
		parts = append(parts, "top_p="+strconv.FormatFloat(*s.TopP, 'g', -1, 64))
	}
	if s.Seed != nil {
		parts = append(parts, "seed="+strconv.FormatInt(*s.Seed, 10))
	}
	if s.MaxTokens != 0 {
		parts = append(parts, "max_tokens="+strconv.FormatInt(s.MaxTokens, 10))
	}
	if s.ReasoningEffort != "" {
		parts = append(parts, "reasoning_effort="+s.ReasoningEffort)
	}
	if len(s.Extra) > 0 {
		b, _ := json.Marshal(s.Extra) // raw JSON values, keys sorted
		parts = append(parts, "extra="+string(b))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// UserMessages turns a prompt into the input messages of a run.
func UserMessages(prompt string) []Message {
	return []Message{{Role: RoleUser, Content: prompt}}
}

// EncodeToolResult is the recorded form of a tool step's result.
func EncodeToolResult(r ToolResult) json.RawMessage {
	b, _ := json.Marshal(r) // a struct of a string and a bool always encodes
	return b
}

// ReconciledResult is the recorded result of a step that a person settled
// with outcome done: the person's text, as the tool's result.
func ReconciledResult(result string) json.RawMessage {
	return EncodeToolResult(ToolResult{Content: result})
}

// DecodeToolResult reads a recorded tool result.
func DecodeToolResult(b []byte) (ToolResult, error) {
	var r ToolResult
	err := json.Unmarshal(b, &r)
	return r, err
}

// EncodeModelReply is the recorded form of a model step's result.
func EncodeModelReply(r ModelReply) (json.RawMessage, error) {
	return json.Marshal(r)
}

// DecodeModelReply reads a recorded model reply.
func DecodeModelReply(b []byte) (ModelReply, error) {
	var r ModelReply
	err := json.Unmarshal(b, &r)
	return r, err
}

// Summarize renders a recorded step result for people, on one line of at
// most about PreviewLen bytes: the text of a tool result (or its
// reference's preview), the text or the tool calls of a model reply.
func Summarize(raw []byte) string {
	if r, err := DecodeModelReply(raw); err == nil {
		if s, ok := SummarizeReply(r); ok {
			return s
		}
	}
	if r, err := DecodeToolResult(raw); err == nil {
		if r.ContentRef != nil {
			return Clip(r.ContentRef.Preview, PreviewLen)
		}
		return Clip(r.Content, PreviewLen)
	}
	return Clip(string(raw), PreviewLen)
}

// SummarizeReply is Summarize of a result already decoded as a model reply,
// for callers that need the reply too; false when r is not one (it has
// neither a role nor a model), and Summarize of the raw result applies.
func SummarizeReply(r ModelReply) (string, bool) {
	if r.Message.Role == "" && r.Model == "" {
		return "", false
	}
	if len(r.Message.ToolCalls) > 0 {
		names := make([]string, len(r.Message.ToolCalls))
		for i, c := range r.Message.ToolCalls {
			names[i] = c.Name
		}
		return "calls " + strings.Join(names, ", "), true
	}
	return Clip(r.Message.Text(), PreviewLen), true
}

// Clip puts s on one line and cuts it at a character boundary to at most
// n bytes, marking the cut with an ellipsis.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
