package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/agentrun/agentrun/agent"
)

// Script is a deterministic conversation: turn N answers model step llm/N.
type Script struct {
	// Delay, optional, is a Go duration ("1s") each Complete waits before
	// it answers (Stream spreads it over its pieces), returning the
	// context's error if the context ends first; "" (the default) answers
	// at once. Crash tests use it to land a kill inside a model call.
	Delay string `json:"delay,omitempty"`
	Turns []Turn `json:"turns"`
}

// Turn is one scripted model reply: tool calls, or a final text.
type Turn struct {
	// Delay, optional, is this turn's delay in place of the script's
	// (a crash test slows down only the model call it kills).
	Delay     string         `json:"delay,omitempty"`
	ToolCalls []ScriptedCall `json:"tool_calls,omitempty"`
	// Text may contain {{last_tool_result}}, replaced by the newest tool
	// result in the turn's input, and {{last_user_message}}, replaced by
	// the newest user message (a session's follow-up, say).
	Text string `json:"text,omitempty"`
	// TextOnError, optional, replaces Text when the newest tool result
	// is an error (a call a person denied, an unknown tool, a failure);
	// it may contain {{last_tool_result}} too. Unset: Text in every case.
	// On a turn of tool calls it is the answer given instead of the calls
	// when the newest tool result is an error: the script stops there.
	TextOnError string `json:"text_on_error,omitempty"`
}

// ScriptedCall is one tool call of a scripted turn.
type ScriptedCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// LastToolResult is the placeholder a scripted text may carry.
const LastToolResult = "{{last_tool_result}}"

// LastUserMessage is the placeholder for the newest user message.
const LastUserMessage = "{{last_user_message}}"

// HandExample is the built-in script: look up the access policy, file a
// ticket, answer with the ticket id, or, when the ticket was denied (or
// failed), say that nothing was filed and why.
func HandExample() Script {
	return Script{Turns: []Turn{
		{ToolCalls: []ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)}}},
		{ToolCalls: []ScriptedCall{{Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access to the orders database","body":"Requested through agentrun; the access policy requires a ticket approved by the data owner."}`)}}},
		{Text: "Your request is filed as " + LastToolResult + ". The data owner will review it; access is granted for 90 days.",
			TextOnError: "I could not file your request: " + LastToolResult + ". Nothing was filed, and you have no access yet."},
	}}
}

// ParseScript decodes and checks a JSON script.
func ParseScript(b []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf(`script is not valid: %v (want {"turns":[{"tool_calls":[{"name":"lookup","args":{}}]},{"text":"..."}]})`, err)
	}
	if s.Delay != "" {
		if d, err := time.ParseDuration(s.Delay); err != nil || d < 0 {
			return Script{}, fmt.Errorf("script delay %q: want a Go duration such as \"1s\"", s.Delay)
		}
	}
	if len(s.Turns) == 0 {
		return Script{}, fmt.Errorf("script has no turns: want at least one turn")
	}
	for i, t := range s.Turns {
		if t.Delay != "" {
			if d, err := time.ParseDuration(t.Delay); err != nil || d < 0 {
				return Script{}, fmt.Errorf("script turn %d: delay %q: want a Go duration such as \"1s\"", i+1, t.Delay)
			}
		}
		if (len(t.ToolCalls) == 0) == (t.Text == "") {
			return Script{}, fmt.Errorf("script turn %d: want either tool_calls or text, not both or neither", i+1)
		}
		if t.TextOnError != "" && t.Text == "" && len(t.ToolCalls) == 0 {
			return Script{}, fmt.Errorf("script turn %d: text_on_error needs text or tool_calls: it replaces them when the newest tool result is an error", i+1)
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return Script{}, fmt.Errorf("script turn %d, call %d: the tool name is empty", i+1, j)
			}
			if len(c.Args) > 0 && !json.Valid(c.Args) {
				return Script{}, fmt.Errorf("script turn %d, call %d: args are not JSON", i+1, j)
			}
		}
	}
	return s, nil
}

// LoadScript reads a JSON script from a file.
func LoadScript(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read script: %w", err)
	}
	s, err := ParseScript(b)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Scripted answers from a Script. It is safe for concurrent use.
type Scripted struct {
	script   Script
	settings agent.ModelSettings // recorded in replies, never used
}

// NewScripted returns a provider playing s.
func NewScripted(s Script) *Scripted { return &Scripted{script: s} }

// NewScriptedSpec builds the scripted model spec names: "scripted" plays
// HandExample, "scripted:PATH" the script at PATH (LoadScript). It checks
// settings as the scripted model takes them, records them in its replies
// and sends nothing (providers.New builds it so for these specs).
func NewScriptedSpec(spec string, settings agent.ModelSettings) (*Scripted, error) {
	if err := CheckSettings("scripted", settings); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	s := HandExample()
	if _, path, _ := strings.Cut(spec, ":"); path != "" {
		var err error
		if s, err = LoadScript(path); err != nil {
			return nil, err
		}
	}
	return &Scripted{script: s, settings: settings}, nil
}

// Name implements Provider.
func (*Scripted) Name() string { return "scripted" }

// Complete implements Provider: the turn is the number of assistant
// messages in the input plus one.
func (p *Scripted) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	reply, delay, err := p.answer(ctx, req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	if err := sleep(ctx, delay); err != nil {
		return agent.ModelReply{}, err
	}
	return reply, nil
}

// Stream implements Streamer: the reply Complete would give, its text
// passed to text in pieces of a few words (StreamWords), the turn's delay
// spread evenly before the pieces. A context that ends during the delay
// ends the call with its error, and no reply.
func (p *Scripted) Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error) {
	if text == nil {
		text = func(string) {}
	}
	reply, delay, err := p.answer(ctx, req)
	if err != nil {
		return agent.ModelReply{}, err
	}
	pieces := splitWords(reply.Message.Content, StreamWords)
	n := max(len(pieces), 1)
	for i := range n {
		if err := sleep(ctx, delay/time.Duration(n)); err != nil {
			return agent.ModelReply{}, err
		}
		if i < len(pieces) {
			text(pieces[i])
		}
	}
	return reply, nil
}

var _ Streamer = (*Scripted)(nil)

// StreamWords is how many words each piece of a scripted stream holds.
const StreamWords = 3

// splitWords cuts s after every n-th word; the pieces add up to s, each
// piece's words followed by the white space after them.
func splitWords(s string, n int) []string {
	var pieces []string
	words, start, inWord := 0, 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		switch {
		case space && inWord:
			words++
		case !space && !inWord && words == n: // a word after the piece's last
			pieces = append(pieces, s[start:i])
			start, words = i, 0
		}
		inWord = !space
	}
	if start < len(s) {
		pieces = append(pieces, s[start:])
	}
	return pieces
}

// sleep waits d, or until ctx ends, then returning its error.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// answer is the reply to req and the delay before it.
func (p *Scripted) answer(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return agent.ModelReply{}, 0, err
	}
	n := 1
	last, lastErr, user := "", false, ""
	for _, m := range req.Messages {
		switch m.Role {
		case agent.RoleUser:
			user = m.Content
		case agent.RoleAssistant:
			n++
		case agent.RoleTool:
			last, lastErr = m.Content, m.IsError
		}
	}
	if n > len(p.script.Turns) {
		return agent.ModelReply{}, 0, &Error{Class: ClassBadRequest, Message: fmt.Sprintf("the script has %d turns and model call %d asked for another", len(p.script.Turns), n)}
	}
	t := p.script.Turns[n-1]
	delay, _ := time.ParseDuration(cmp.Or(t.Delay, p.script.Delay)) // checked by ParseScript
	reply := agent.ModelReply{Model: p.Name(), Message: agent.Message{Role: agent.RoleAssistant}, Settings: SentSettings(p.settings)}
	if len(t.ToolCalls) == 0 || (lastErr && t.TextOnError != "") {
		text := t.Text
		if lastErr && t.TextOnError != "" {
			text = t.TextOnError
		}
		reply.Message.Content = strings.NewReplacer(LastToolResult, last, LastUserMessage, user).Replace(text)
		reply.FinishReason = agent.FinishStop
	} else {
		for i, c := range t.ToolCalls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			reply.Message.ToolCalls = append(reply.Message.ToolCalls, agent.ToolCall{ID: fmt.Sprintf("call_%d_%d", n, i), Name: c.Name, Args: args})
		}
		reply.FinishReason = agent.FinishToolCalls
	}
	for _, m := range req.Messages {
		reply.Usage.InputTokens += int64(len(m.Content)/4 + 1)
	}
	reply.Usage.OutputTokens = int64(len(reply.Message.Content)/4 + 1)
	return reply, delay, nil
}
