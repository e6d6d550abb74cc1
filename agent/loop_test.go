package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

var (
	readSpec  = agent.ToolSpec{Name: "lookup", Kind: agent.KindRead}
	writeSpec = agent.ToolSpec{Name: "create_ticket", Kind: agent.KindWrite}
	input     = agent.UserMessages("hello")
)

func reply(t *testing.T, content string, finish string, calls ...agent.ToolCall) json.RawMessage {
	t.Helper()
	b, err := agent.EncodeModelReply(agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: content, ToolCalls: calls}, FinishReason: finish})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func call(name string) agent.ToolCall {
	return agent.ToolCall{ID: "c-" + name, Name: name, Args: json.RawMessage(`{}`)}
}

func TestLoop(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec, writeSpec}}
	cases := []struct {
		name  string
		facts func(f *agent.Facts)
		want  string // "step NAME KIND" or "STATUS detail"
	}{
		{"first step is the model", func(*agent.Facts) {}, "step llm/1 model"},
		{"a read runs without approval", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"))
		}, "step tool/1/0/lookup read"},
		{"a write waits for approval", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("create_ticket"))
		}, "AwaitingApproval tool/1/0/create_ticket"},
		{"an approved write runs", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("create_ticket"))
			f.Decisions["tool/1/0/create_ticket"] = agent.Approval{Approved: true}
		}, "step tool/1/0/create_ticket write"},
		{"an indeterminate write stops the run", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("create_ticket"))
			f.Decisions["tool/1/0/create_ticket"] = agent.Approval{Approved: true}
			f.Indeterminate["tool/1/0/create_ticket"] = true
		}, "Indeterminate tool/1/0/create_ticket"},
		{"a denied write tells the model", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("create_ticket"))
			f.Decisions["tool/1/0/create_ticket"] = agent.Approval{Reason: "no"}
		}, "step llm/2 model"},
		{"reads run before approvals are asked", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("create_ticket"), call("lookup"))
		}, "step tool/1/1/lookup read"},
		{"an unknown tool is answered without a step", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("nosuch"))
		}, "step llm/2 model"},
		{"a text completes", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "the answer", agent.FinishStop)
		}, "Completed the answer"},
		{"tool calls cut by the length limit are not executed", func(f *agent.Facts) {
			f.Results["llm/1"] = reply(t, "", agent.FinishLength, call("lookup"))
		}, "Failed llm/1 was cut off by the model's length limit"},
		{"a damaged record fails the run", func(f *agent.Facts) {
			f.Results["llm/1"] = json.RawMessage(`[1]`)
		}, "Failed recorded result of llm/1 is not a model reply"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := agent.NewFacts()
			c.facts(f)
			d := loop.Next(input, f)
			if got := describe(d); !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, want prefix %q", got, c.want)
			}
			if again := describe(loop.Next(input, f)); again != describe(d) {
				t.Fatalf("not deterministic: %q then %q", describe(d), again)
			}
		})
	}
}

func describe(d agent.Decision) string {
	if d.Step != nil {
		return "step " + d.Step.Name + " " + string(d.Step.Kind)
	}
	o := d.Outcome
	switch o.Status {
	case agent.StatusAwaitingApproval:
		return string(o.Status) + " " + o.Pending[0].Marker
	case agent.StatusIndeterminate:
		return string(o.Status) + " " + o.Step
	case agent.StatusCompleted:
		return string(o.Status) + " " + o.Answer
	}
	return string(o.Status) + " " + o.Reason
}

// TestLoopModelSeesToolResults: the model's next input carries each tool
// result, the denial reason and the unknown-tool message, in call order.
func TestLoopModelSeesToolResults(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec, writeSpec}}
	f := agent.NewFacts()
	f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"), call("create_ticket"), call("nosuch"))
	f.Results["tool/1/0/lookup"] = agent.EncodeToolResult(agent.ToolResult{Content: "policy text"})
	f.Decisions["tool/1/1/create_ticket"] = agent.Approval{Reason: "freeze"}
	d := loop.Next(input, f)
	if d.Step == nil || d.Step.Name != "llm/2" {
		t.Fatalf("got %+v, want llm/2", d)
	}
	msgs := d.Step.Model.Messages
	if len(msgs) != 5 {
		t.Fatalf("messages: %d, want 5 (user, assistant, 3 tool results)", len(msgs))
	}
	want := []string{"policy text", "denied by operator: freeze", `unknown tool "nosuch"; available tools: lookup, create_ticket`}
	for i, w := range want {
		if m := msgs[2+i]; m.Role != agent.RoleTool || m.Content != w || m.ToolCallID == "" {
			t.Errorf("message %d = %+v, want tool result %q", 2+i, m, w)
		}
	}
	if len(d.Step.Model.Tools) != 2 {
		t.Errorf("tools offered: %d, want 2", len(d.Step.Model.Tools))
	}
}

func TestLoopMaxTurns(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec}, MaxTurns: 2}
	f := agent.NewFacts()
	for _, s := range []string{"llm/1", "llm/2"} {
		f.Results[s] = reply(t, "", agent.FinishToolCalls, call("lookup"))
	}
	f.Results["tool/1/0/lookup"] = agent.EncodeToolResult(agent.ToolResult{Content: "x"})
	f.Results["tool/2/0/lookup"] = agent.EncodeToolResult(agent.ToolResult{Content: "x"})
	if d := loop.Next(input, f); d.Outcome == nil || d.Outcome.Status != agent.StatusFailed || !strings.Contains(d.Outcome.Reason, "limit 2") {
		t.Fatalf("got %+v, want Failed at the turn limit", d)
	}
}

func TestStepNames(t *testing.T) {
	t.Parallel()
	if got := agent.ToolStep(2, 0, "create_ticket"); got != "tool/2/0/create_ticket" {
		t.Fatalf("ToolStep = %s", got)
	}
	for s, ok := range map[string]bool{
		"llm/1": true, "tool/2/0/create_ticket": true, "llm/0": false, "tool/2/x/a": false,
		"tool/2/0/": false, "tool/02/0/a": false, "ticket": false, "": false, "tool/1/0/a b": false,
	} {
		if agent.ValidStep(s) != ok {
			t.Errorf("ValidStep(%q) = %v, want %v", s, !ok, ok)
		}
	}
}
