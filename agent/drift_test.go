package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

func replyRaw(t *testing.T, text string, calls ...agent.ToolCall) json.RawMessage {
	t.Helper()
	raw, err := agent.EncodeModelReply(agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: text, ToolCalls: calls}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestCompareRuns(t *testing.T) {
	lookup := agent.ToolCall{ID: "a", Name: "lookup", Args: json.RawMessage(`{"b":1, "a":[1.50]}`)}
	same := agent.ToolCall{ID: "z", Name: "lookup", Args: json.RawMessage(`{"a":[1.50],"b":1}`)}
	other := agent.ToolCall{ID: "y", Name: "email", Args: json.RawMessage(`{}`)}
	origin := map[string]json.RawMessage{
		"llm/1": replyRaw(t, "", lookup), "tool/1/0/lookup": json.RawMessage(`{"content":"x"}`),
		"llm/2": replyRaw(t, "", lookup), "llm/3": replyRaw(t, "done"),
	}
	// The same calls with the keys in another order: no departure.
	d := agent.CompareRuns("o", "f", "llm/2", origin, map[string]json.RawMessage{"llm/2": replyRaw(t, "", same), "llm/3": replyRaw(t, "done")})
	if d.Departed != "" || d.AnswerChanged || len(d.NewCalls) != 0 || d.String() != "fork f of o from llm/2: no departure; answer unchanged" {
		t.Fatalf("same: %+v %s", d, d)
	}
	d = agent.CompareRuns("o", "f", "llm/2", origin, map[string]json.RawMessage{"llm/2": replyRaw(t, "", other), "llm/3": replyRaw(t, "sent")})
	if d.Departed != "llm/2" || !d.AnswerChanged || len(d.NewCalls) != 1 || d.NewCalls[0] != "email {}" || strings.Contains(d.String(), "\n") {
		t.Fatalf("other: %+v", d)
	}
	// A fork from a tool step keeps llm/1: it compares from llm/2.
	d = agent.CompareRuns("o", "f", "tool/1/0/lookup", origin, map[string]json.RawMessage{"llm/2": replyRaw(t, "", lookup), "llm/3": replyRaw(t, "done"), "llm/4": replyRaw(t, "more")})
	if d.Departed != "llm/4" || !d.AnswerChanged || d.ForkAnswer != "more" {
		t.Fatalf("longer: %+v", d)
	}
}

func TestReplayAnswer(t *testing.T) {
	lookup := agent.ToolCall{Name: "lookup", Args: json.RawMessage(`{"q":1}`)}
	results := map[string]json.RawMessage{
		"llm/1":           replyRaw(t, "", lookup, lookup),
		"tool/1/0/lookup": json.RawMessage(`{"content":"first"}`),
		"tool/1/1/lookup": json.RawMessage(`{"content":"second"}`),
	}
	r := agent.Replay{Origin: "o", Calls: agent.OriginCalls(results)}
	if len(r.Calls) != 2 {
		t.Fatalf("origin calls: %+v", r.Calls)
	}
	// The same step first; then any unused matching call.
	if got := r.Answer("tool/1/1/lookup", lookup, nil); got.Content != "second" || got.Replayed != "tool/1/1/lookup" {
		t.Fatalf("same step: %+v", got)
	}
	if got := r.Answer("tool/5/0/lookup", lookup, map[string]bool{"tool/1/0/lookup": true}); got.Content != "second" {
		t.Fatalf("unused: %+v", got)
	}
	got := r.Answer("tool/5/0/lookup", agent.ToolCall{Name: "lookup", Args: json.RawMessage(`{"q":2}`)}, nil)
	if !got.IsError || got.Replayed != agent.ReplayedNone || got.Content != "replay: o made no call of lookup with these arguments; a replay runs no tool" {
		t.Fatalf("no match: %+v", got)
	}
	if id := agent.ForkID(agent.Fork{Origin: "o", From: "tool/1/0/lookup"}); !strings.HasPrefix(id, "o-fork-tool.1.0.lookup-") || len(id) != len("o-fork-tool.1.0.lookup-")+6 {
		t.Fatalf("ForkID: %s", id)
	}
	msgs := agent.WithSystem([]agent.Message{{Role: agent.RoleUser, Content: "hi"}}, "sys")
	if len(msgs) != 2 || msgs[0].Content != "sys" {
		t.Fatalf("WithSystem: %+v", msgs)
	}
}
