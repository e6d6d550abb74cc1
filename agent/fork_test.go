package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

func TestForkAt(t *testing.T) {
	user := agent.Message{Role: agent.RoleUser, Content: "refund order 7"}
	reply1 := agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "a", Name: "order", Args: json.RawMessage(`{"id":7}`)},
		{ID: "b", Name: "refund", Args: json.RawMessage(`{"id":7}`)},
	}}, FinishReason: agent.FinishToolCalls}
	raw1, _ := json.Marshal(reply1)
	results := map[string]json.RawMessage{
		"llm/1":          raw1,
		"tool/1/0/order": json.RawMessage(`{"content":"order 7: $12"}`),
	}
	in1 := agent.ModelInput{New: []agent.Message{user}}

	// From llm/1: the run's input again, no model call counted.
	p, err := agent.ForkAt("llm/1", in1, results)
	if err != nil || p.Base != 0 || len(p.Checkpoint.Input) != 1 || p.Results != nil {
		t.Fatalf("llm/1: %+v, %v", p, err)
	}
	// From tool/1/1/refund: llm/1's reply and the order lookup kept; the
	// loop names the refund as the next step.
	p, err = agent.ForkAt("tool/1/1/refund", in1, results)
	if err != nil || p.Base != 1 || len(p.Results) != 2 {
		t.Fatalf("tool/1/1/refund: %+v, %v", p, err)
	}
	facts := agent.NewFacts()
	for k, v := range p.Results {
		facts.Results[k] = v
	}
	loop := agent.Loop{Tools: []agent.ToolSpec{{Name: "order", Kind: agent.KindRead}, {Name: "refund", Kind: agent.KindWrite, Approval: agent.ApprovalNever}}}
	d := loop.Next(p.Checkpoint, facts)
	if d.Step == nil || d.Step.Name != "tool/1/1/refund" {
		t.Fatalf("next after the fork point: %+v", d)
	}
	// From llm/2: the conversation as llm/2 saw it, carried inline.
	in2 := agent.ModelInput{Conversation: agent.Conversation{Tail: []agent.Message{user, reply1.Message}},
		New: []agent.Message{{Role: agent.RoleTool, ToolCallID: "a", Content: "order 7: $12"}, {Role: agent.RoleTool, ToolCallID: "b", Content: "refunded"}}}
	p, err = agent.ForkAt("llm/2", in2, results)
	if err != nil || p.Base != 1 || p.Checkpoint.Conversation.Len() != 4 {
		t.Fatalf("llm/2: %+v, %v", p, err)
	}
	d = loop.Next(p.Checkpoint, agent.NewFacts())
	if d.Step == nil || d.Step.Name != "llm/2" || d.Step.Model.Conversation.Len() != 4 || len(d.Step.Model.New) != 0 {
		t.Fatalf("next after llm/2's fork point: %+v", d.Step)
	}

	for _, bad := range []struct{ from, want string }{
		{"tool/1/2/email", "asked for no such call (it asked for tool/1/0/order, tool/1/1/refund)"},
		{"tool/1/1/order", "asked for no such call"},
		{"llm/x", "not a step name"},
	} {
		if _, err := agent.ForkAt(bad.from, in1, results); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ForkAt(%s) = %v, want %q", bad.from, err, bad.want)
		}
	}
	delete(results, "tool/1/0/order")
	if _, err := agent.ForkAt("tool/1/1/refund", in1, results); err == nil || !strings.Contains(err.Error(), "tool/1/0/order, before it, has no recorded result") {
		t.Errorf("missing result: %v", err)
	}
}

func TestForkHazards(t *testing.T) {
	writes := []agent.Write{
		{Step: "tool/3/0/create_ticket", Result: `{"ticket":"TICKET-7"}`},
		{Step: "tool/1/0/create_ticket", Result: `{"ticket":"TICKET-1"}`},
		{Step: "tool/2/1/email", Unknown: true},
		{Step: "tool/2/0/email", Result: "sent"},
	}
	got := agent.WritesAfter("tool/2/1/email", writes)
	if len(got) != 2 || got[0].Step != "tool/2/1/email" || got[1].Step != "tool/3/0/create_ticket" {
		t.Fatalf("WritesAfter: %+v", got)
	}
	if n := len(agent.WritesAfter("llm/4", writes)); n != 0 {
		t.Fatalf("after llm/4: %d writes", n)
	}
	if n := len(agent.WritesAfter("llm/1", writes)); n != 4 {
		t.Fatalf("after llm/1: %d writes", n)
	}
	p := agent.ForkPoint{Hazards: got}
	f := agent.Fork{Origin: "run-1", From: "tool/2/1/email"}
	_, err := p.Gate(f)
	var he *agent.HazardError
	if !errors.As(err, &he) || strings.Contains(err.Error(), "\n") ||
		err.Error() != `fork of run-1 from tool/2/1/email: run-1 made 2 writes at or after that step, which the fork may make again: tool/2/1/email (started, outcome unknown); tool/3/0/create_ticket (returned {"ticket":"TICKET-7"}); acknowledge with --ack-writes (AckWrites) to go on` {
		t.Fatalf("Gate: %v", err)
	}
	f.AckWrites = true
	if q, err := p.Gate(f); err != nil || !q.Acked {
		t.Fatalf("acknowledged: %+v, %v", q, err)
	}
}
