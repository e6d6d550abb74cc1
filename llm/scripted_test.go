package llm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

// TestHandExampleAnswersTruthfully: the built-in script's answer names the
// ticket when create_ticket returned one, and says that nothing was filed
// when a person denied it (or it failed): never "filed as denied".
func TestHandExampleAnswersTruthfully(t *testing.T) {
	t.Parallel()
	conv := func(ticket agent.Message) []agent.Message {
		return []agent.Message{
			{Role: agent.RoleUser, Content: hand.Prompt},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_1_0", Name: "lookup"}}},
			{Role: agent.RoleTool, ToolCallID: "call_1_0", Content: "Access policy: ..."},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "call_2_0", Name: "create_ticket"}}},
			ticket,
		}
	}
	cases := []struct {
		name      string
		ticket    agent.Message
		want      string
		forbidden []string
	}{
		{"filed", agent.Message{Role: agent.RoleTool, ToolCallID: "call_2_0", Content: "TICKET-1"},
			"Your request is filed as TICKET-1. The data owner will review it; access is granted for 90 days.", nil},
		{"denied", agent.Message{Role: agent.RoleTool, ToolCallID: "call_2_0", IsError: true, Content: agent.DeniedByOperator + "not now"},
			"I could not file your request: denied by operator: not now. Nothing was filed, and you have no access yet.",
			[]string{"filed as", "granted"}},
		{"failed", agent.Message{Role: agent.RoleTool, ToolCallID: "call_2_0", IsError: true, Content: "ticket store unavailable"},
			"I could not file your request: ticket store unavailable. Nothing was filed, and you have no access yet.", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewScripted(HandExample()).Complete(t.Context(), agent.ModelRequest{Messages: conv(c.ticket)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Message.Content != c.want || len(r.Message.ToolCalls) != 0 {
				t.Fatalf("answer %q (calls %v), want %q", r.Message.Content, r.Message.ToolCalls, c.want)
			}
			for _, f := range c.forbidden {
				if strings.Contains(r.Message.Content, f) {
					t.Fatalf("answer %q says %q", r.Message.Content, f)
				}
			}
		})
	}
}

// TestScriptTextOnError: text_on_error replaces text, or a turn's calls,
// after an error result only.
func TestScriptTextOnError(t *testing.T) {
	t.Parallel()
	s, err := ParseScript([]byte(`{"turns":[{"tool_calls":[{"name":"x"}]},{"text":"ok: {{last_tool_result}}","text_on_error":"failed: {{last_tool_result}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for isErr, want := range map[bool]string{false: "ok: r", true: "failed: r"} {
		r, err := NewScripted(s).Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{
			{Role: agent.RoleUser, Content: "u"}, {Role: agent.RoleAssistant}, {Role: agent.RoleTool, Content: "r", IsError: isErr}}})
		if err != nil || r.Message.Content != want {
			t.Fatalf("error result %v: %q, %v; want %q", isErr, r.Message.Content, err, want)
		}
	}
	// On a turn of tool calls, text_on_error answers instead of the calls
	// after an error result only.
	s, err = ParseScript([]byte(`{"turns":[{"tool_calls":[{"name":"x"}]},{"tool_calls":[{"name":"y"}],"text_on_error":"stopped: {{last_tool_result}}"},{"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for isErr, want := range map[bool]string{false: "", true: "stopped: r"} {
		r, err := NewScripted(s).Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{
			{Role: agent.RoleUser, Content: "u"}, {Role: agent.RoleAssistant}, {Role: agent.RoleTool, Content: "r", IsError: isErr}}})
		calls := len(r.Message.ToolCalls)
		if err != nil || r.Message.Content != want || (calls == 1) == isErr {
			t.Fatalf("error result %v: %q with %d calls, %v; want %q", isErr, r.Message.Content, calls, err, want)
		}
	}
	_, err = ParseScript([]byte(`{"turns":[{"text_on_error":"no"}]}`))
	if err == nil {
		t.Fatal("a turn of text_on_error alone: want refused")
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"a b c", []string{"a b c"}},
		{"a b c ", []string{"a b c "}},
		{"a b c d", []string{"a b c ", "d"}},
		{"  a  b\nc\td e f g", []string{"  a  b\nc\t", "d e f ", "g"}},
		{"héllo wörld ünd\u00a0mehr", []string{"héllo wörld ünd\u00a0", "mehr"}},
	} {
		got := splitWords(tc.in, 3)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitWords(%q, 3) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Join(got, "") != tc.in {
			t.Errorf("splitWords(%q, 3) = %q: does not add up", tc.in, got)
		}
	}
}
