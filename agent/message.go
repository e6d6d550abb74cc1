package agent

import "encoding/json"

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
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ToolResult is what a tool step returns to the model.
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens}
}

// Finish reasons a provider reports for a model turn.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// ModelRequest is the input of a model step.
type ModelRequest struct {
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
}

// ModelReply is the recorded result of a model step.
type ModelReply struct {
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Usage        Usage   `json:"usage"`
	// Model names the provider and model that answered, e.g. "scripted".
	Model string `json:"model,omitempty"`
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
