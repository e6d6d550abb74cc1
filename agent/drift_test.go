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

// TestCompareRunsAnswerByReference: an answer recorded by reference (a
// streamed answer: its key, size and preview, no text) is the same answer
// as the same text inline, and another answer with the same start is not.
func TestCompareRunsAnswerByReference(t *testing.T) {
	long := strings.Repeat("a long answer ", 40)
	other := strings.Repeat("a long answer ", 39) + "with another end"
	byRef := func(text string) json.RawMessage {
		m := agent.Message{Role: agent.RoleAssistant, Content: text}
		ref := &agent.Ref{Key: m.TextKey(), Size: len(text), Preview: text[:agent.PreviewLen]}
		raw, err := agent.EncodeModelReply(agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, ContentRef: ref}, Streamed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	origin := map[string]json.RawMessage{"llm/1": byRef(long)}
	d := agent.CompareRuns("o", "f", "llm/1", origin, map[string]json.RawMessage{"llm/1": replyRaw(t, long)})
	if d.Departed != "" || d.AnswerChanged {
		t.Fatalf("the same answer by reference and inline: %+v", d)
	}
	d = agent.CompareRuns("o", "f", "llm/1", origin, map[string]json.RawMessage{"llm/1": byRef(other)})
	if d.Departed != "llm/1" || !d.AnswerChanged {
		t.Fatalf("another answer with the same start, both by reference: %+v", d)
	}
}

// TestMessageRecorded: a message holding its text both inline and by
// reference (a streamed answer the run took back) is recorded with the
// reference alone; its text key is the reference's, and the reply is not
// empty.
func TestMessageRecorded(t *testing.T) {
	text := "the answer"
	key := agent.Message{Content: text}.TextKey()
	if !strings.HasPrefix(key, "sha256:") || len(key) != len("sha256:")+64 {
		t.Fatalf("text key %q, want sha256: and 64 hex digits", key)
	}
	both := agent.Message{Role: agent.RoleAssistant, Content: text, ContentRef: &agent.Ref{Key: key, Size: len(text)}}
	if r := both.Recorded(); r.Content != "" || r.ContentRef == nil || both.Content != text {
		t.Fatalf("recorded %+v (from %+v); want the reference alone, the original untouched", r, both)
	}
	if both.Text() != text || both.TextKey() != key {
		t.Fatalf("text %q, key %q", both.Text(), both.TextKey())
	}
	if (agent.ModelReply{Message: both.Recorded()}).Empty() {
		t.Fatal("a reply whose answer is by reference is empty")
	}
}
