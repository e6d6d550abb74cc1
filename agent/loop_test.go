package agent_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
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
			d := loop.Next(agent.Start(input), f)
			if got := describe(d); !strings.HasPrefix(got, c.want) {
				t.Fatalf("got %q, want prefix %q", got, c.want)
			}
			if again := describe(loop.Next(agent.Start(input), f)); again != describe(d) {
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
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec, writeSpec}, ToolsKey: "sha256:tools"}
	f := agent.NewFacts()
	f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"), call("create_ticket"), call("nosuch"))
	f.Results[hand.LookupStep] = agent.EncodeToolResult(agent.ToolResult{Content: "policy text"})
	f.Decisions["tool/1/1/create_ticket"] = agent.Approval{Reason: "freeze"}
	d := loop.Next(agent.Start(input), f)
	if d.Step == nil || d.Step.Name != "llm/2" {
		t.Fatalf("got %+v, want llm/2", d)
	}
	// A reply recorded without a conversation reference carries the
	// conversation inline: user and assistant, then the new tool results.
	in := d.Step.Model
	if tail := in.Conversation.Tail; len(tail) != 2 || tail[0].Role != agent.RoleUser || tail[1].Role != agent.RoleAssistant {
		t.Fatalf("conversation: %+v, want user and assistant inline", in.Conversation)
	}
	want := []string{"policy text", "denied by operator: freeze", `unknown tool "nosuch"; available tools: lookup, create_ticket`}
	steps := []string{"tool/1/0/lookup", "tool/1/1/create_ticket", "tool/1/2/nosuch"}
	if len(in.New) != len(want) {
		t.Fatalf("new messages: %d, want %d tool results", len(in.New), len(want))
	}
	for i, w := range want {
		if m := in.New[i]; m.Role != agent.RoleTool || m.Content != w || m.ToolCallID == "" || m.Step != steps[i] {
			t.Errorf("new message %d = %+v, want tool result %q of %s", i, m, w, steps[i])
		}
	}
	if in.Tools != "sha256:tools" {
		t.Errorf("tools key %q, want the loop's", in.Tools)
	}
}

// TestLoopCheckpoint: a loop started from the checkpoint of its last
// decision, over facts that forgot everything before it, decides exactly
// as one replaying every fact from the start; model inputs carry the
// reply's conversation reference and stay the same size whatever the turn.
func TestLoopCheckpoint(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec, writeSpec}}
	all, pruned := agent.NewFacts(), agent.NewFacts()
	cp := agent.Start(input)
	var sizes []int
	for i := 1; ; i++ {
		full := loop.Next(agent.Start(input), all)
		d := loop.Next(cp, pruned)
		if describe(full) != describe(d) {
			t.Fatalf("decision %d: from the checkpoint %q, from the start %q", i, describe(d), describe(full))
		}
		if d.Outcome != nil {
			if d.Checkpoint.Turn != 40 || d.Outcome.Status != agent.StatusCompleted {
				t.Fatalf("turn %d: %s, want Completed at turn 40", d.Checkpoint.Turn, describe(d))
			}
			break
		}
		cp = d.Checkpoint
		pruned.Forget(cp)
		if len(pruned.Results) > 2 {
			t.Fatalf("decision %d: %d facts kept, want at most the current turn's", i, len(pruned.Results))
		}
		var res json.RawMessage
		turn := cp.Turn + 1
		switch s := d.Step; {
		case s.Kind == agent.KindModel:
			b, _ := json.Marshal(s.Model)
			sizes = append(sizes, len(b))
			conv := agent.Conversation{Head: fmt.Sprintf("sha256:%064d", turn), Stored: 2 * turn}
			m := agent.Message{Role: agent.RoleAssistant}
			if turn < 40 {
				m.ToolCalls = []agent.ToolCall{call("lookup")}
			} else {
				m.Content = "done"
			}
			res, _ = agent.EncodeModelReply(agent.ModelReply{Message: m, Conversation: &conv})
		default:
			res = agent.EncodeToolResult(agent.ToolResult{ContentRef: &agent.Ref{Key: "sha256:r", Size: 4096, Preview: "..."}})
		}
		all.Results[d.Step.Name] = res
		pruned.Results[d.Step.Name] = res
	}
	if sizes[10] != sizes[len(sizes)-1] {
		t.Fatalf("model input sizes grew: turn 11 %d bytes, turn 40 %d bytes", sizes[10], sizes[len(sizes)-1])
	}
	if got, ok := loop.Find(agent.Start(input), all, "tool/7/0/lookup"); !ok || got.Call == nil || got.Call.Name != "lookup" {
		t.Fatalf("Find tool/7/0/lookup = %+v, %v", got, ok)
	}
	if got, ok := loop.Find(agent.Start(input), all, "llm/9"); !ok || got.Model.Conversation.Head != fmt.Sprintf("sha256:%064d", 8) || len(got.Model.New) != 1 {
		t.Fatalf("Find llm/9 = %+v, %v; want the conversation after llm/8 and one tool result", got, ok)
	}
	if _, ok := loop.Find(agent.Start(input), all, "llm/41"); ok {
		t.Fatal("Find found a step the run never reached")
	}
}

func TestBudgetLimit(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec}}
	f := agent.NewFacts()
	for _, s := range []string{"llm/1", "llm/2"} {
		f.Results[s] = reply(t, "", agent.FinishToolCalls, call("lookup"))
	}
	f.Results[hand.LookupStep] = agent.EncodeToolResult(agent.ToolResult{Content: "x"})
	f.Results["tool/2/0/lookup"] = agent.EncodeToolResult(agent.ToolResult{Content: "x"})
	d := loop.Next(agent.Start(input), f)
	if d.Step == nil || d.Step.Name != "llm/3" {
		t.Fatalf("the loop itself set a limit: %+v", d)
	}
	for _, c := range []struct {
		b    agent.Budget
		used agent.Usage
		want string // "" lets llm/3 run
	}{
		{agent.Budget{MaxTurns: 2}, agent.Usage{}, "the run made 2 model calls; its limit is 2"},
		{agent.Budget{MaxTurns: 3}, agent.Usage{}, ""},
		{agent.Budget{MaxTurns: 3, MaxTokens: 100}, agent.Usage{InputTokens: 60, OutputTokens: 40}, "the run used 100 tokens; its limit is 100"},
		{agent.Budget{MaxTurns: 3, MaxTokens: 101}, agent.Usage{InputTokens: 60, OutputTokens: 40}, ""},
		{agent.Budget{}, agent.Usage{InputTokens: 1 << 40}, ""}, // no token limit, 25 turns
	} {
		got := c.b.Limit(d, c.used)
		switch {
		case c.want == "" && (got.Step == nil || got.Step.Name != "llm/3"):
			t.Errorf("%+v with %+v: %+v, want llm/3", c.b, c.used, got)
		case c.want != "" && (got.Outcome == nil || got.Outcome.Status != agent.StatusBudgetExceeded || got.Outcome.Reason != c.want):
			t.Errorf("%+v with %+v: %+v, want BudgetExceeded: %s", c.b, c.used, got.Outcome, c.want)
		}
	}
	// A tool step is never stopped by the budget: its call was already paid.
	f2 := agent.NewFacts()
	f2.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"))
	if got := (agent.Budget{MaxTurns: 1}).Limit(loop.Next(agent.Start(input), f2), agent.Usage{}); got.Step == nil || got.Step.Name != hand.LookupStep {
		t.Fatalf("tool step under a spent budget: %+v, want tool/1/0/lookup", got)
	}
}

func TestStepNames(t *testing.T) {
	t.Parallel()
	if got := agent.ToolStep(2, 0, "create_ticket"); got != hand.TicketStep {
		t.Fatalf("ToolStep = %s", got)
	}
	for s, ok := range map[string]bool{
		"llm/1": true, hand.TicketStep: true, "llm/0": false, "tool/2/x/a": false,
		"tool/2/0/": false, "tool/02/0/a": false, "ticket": false, "": false, "tool/1/0/a b": false,
	} {
		if agent.ValidStep(s) != ok {
			t.Errorf("ValidStep(%q) = %v, want %v", s, !ok, ok)
		}
	}
}

// TestLoopCutAnswer: a final answer with finish reason length completes
// flagged as cut off, or fails the run with FailOnCut; a whole answer is
// not flagged, and a reply recorded before the flag existed (no finish
// reason) completes as before.
func TestLoopCutAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		finish    string
		failOnCut bool
		status    agent.Status
		cut       bool
	}{
		{"cut answer is flagged", agent.FinishLength, false, agent.StatusCompleted, true},
		{"cut answer fails with FailOnCut", agent.FinishLength, true, agent.StatusFailed, false},
		{"whole answer is not flagged", agent.FinishStop, true, agent.StatusCompleted, false},
		{"old record without finish reason", "", true, agent.StatusCompleted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loop := agent.Loop{Tools: []agent.ToolSpec{readSpec}, FailOnCut: tc.failOnCut}
			f := agent.NewFacts()
			f.Results["llm/1"] = reply(t, "The policy says you need a tick", tc.finish)
			d := loop.Next(agent.Start(input), f)
			if d.Outcome == nil || d.Outcome.Status != tc.status || d.Outcome.CutOff != tc.cut {
				t.Fatalf("got %+v, want %s with cut off %v", d.Outcome, tc.status, tc.cut)
			}
			if tc.status == agent.StatusFailed && (!strings.Contains(d.Outcome.Reason, "llm/1: the final answer was cut off") || !strings.Contains(d.Outcome.Reason, "AGENTRUN_FAIL_ON_CUT_ANSWER")) {
				t.Fatalf("reason %q does not say the answer of llm/1 was cut off and why the run fails", d.Outcome.Reason)
			}
			if tc.status == agent.StatusCompleted && d.Outcome.Answer != "The policy says you need a tick" {
				t.Fatalf("answer %q", d.Outcome.Answer)
			}
		})
	}
}

// TestLoopEmptyAnswer: a final answer with no text (or only white space)
// completes flagged as empty, or fails the run with FailOnEmpty, in one
// line that says the model returned nothing; an answer with text, or a
// reply with tool calls and no text, is not flagged. FailOnCut wins over
// FailOnEmpty for an empty answer the length limit cut.
func TestLoopEmptyAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		text, finish     string
		failOnEmpty, cut bool
		status           agent.Status
		empty            bool
		reason           string
	}{
		{"empty answer is flagged", "", agent.FinishStop, false, false, agent.StatusCompleted, true, ""},
		{"white space is empty", " \n\t", agent.FinishStop, false, false, agent.StatusCompleted, true, ""},
		{"empty answer fails with FailOnEmpty", "", agent.FinishStop, true, false, agent.StatusFailed, false,
			"llm/1: the model returned nothing: the final answer has no text (finish reason stop); this run fails on empty answers (AGENTRUN_FAIL_ON_EMPTY_ANSWER)"},
		{"old record without finish reason", "", "", true, false, agent.StatusFailed, false, "(finish reason none)"},
		{"answer with text is not flagged", "done", agent.FinishStop, true, false, agent.StatusCompleted, false, ""},
		{"empty and cut: both flags", "", agent.FinishLength, false, false, agent.StatusCompleted, true, ""},
		{"empty and cut with FailOnCut: the cut fails it", "", agent.FinishLength, true, true, agent.StatusFailed, false, "AGENTRUN_FAIL_ON_CUT_ANSWER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loop := agent.Loop{Tools: []agent.ToolSpec{readSpec}, FailOnEmpty: tc.failOnEmpty, FailOnCut: tc.cut}
			f := agent.NewFacts()
			f.Results["llm/1"] = reply(t, tc.text, tc.finish)
			d := loop.Next(agent.Start(input), f)
			if d.Outcome == nil || d.Outcome.Status != tc.status || d.Outcome.Empty != tc.empty {
				t.Fatalf("got %+v, want %s with empty %v", d.Outcome, tc.status, tc.empty)
			}
			if tc.status == agent.StatusFailed && (!strings.Contains(d.Outcome.Reason, tc.reason) || strings.Contains(d.Outcome.Reason, "\n")) {
				t.Fatalf("reason %q, want one line containing %q", d.Outcome.Reason, tc.reason)
			}
			if tc.status == agent.StatusCompleted && d.Outcome.CutOff != (tc.finish == agent.FinishLength) {
				t.Fatalf("cut off %v with finish %q", d.Outcome.CutOff, tc.finish)
			}
		})
	}
	// Tool calls without text are not an empty answer: the run goes on.
	f := agent.NewFacts()
	f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"))
	if d := (agent.Loop{Tools: []agent.ToolSpec{readSpec}, FailOnEmpty: true}).Next(agent.Start(input), f); d.Step == nil || d.Step.Name != hand.LookupStep {
		t.Fatalf("a reply with a tool call and no text: %+v, want the tool step", d)
	}
}

func TestModelSettingsString(t *testing.T) {
	t.Parallel()
	temp, seed := 0.2, int64(7)
	s := agent.ModelSettings{Temperature: &temp, Seed: &seed, MaxTokens: 1024, ReasoningEffort: "low",
		Extra: map[string]json.RawMessage{"top_k": json.RawMessage(`40`), "min_p": json.RawMessage(`0.05`)}}
	if got, want := s.String(), `temperature=0.2 seed=7 max_tokens=1024 reasoning_effort=low extra={"min_p":0.05,"top_k":40}`; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got := (agent.ModelSettings{}).String(); got != "none" || !(agent.ModelSettings{}).IsZero() || s.IsZero() {
		t.Fatalf("zero settings: %q", got)
	}
}

// TestLoopMessages: a message queued for a model step is given to it after
// the step's tool results; one queued for the step after a final answer
// makes the loop go on instead of completing; Forget drops messages of
// settled steps.
func TestLoopMessages(t *testing.T) {
	t.Parallel()
	loop := agent.Loop{Tools: []agent.ToolSpec{readSpec, writeSpec}}
	f := agent.NewFacts()
	f.Results["llm/1"] = reply(t, "", agent.FinishToolCalls, call("lookup"))
	f.Results[hand.LookupStep] = json.RawMessage(`{"content":"policy"}`)
	f.AddMessage("llm/2", "also check staging")
	d := loop.Next(agent.Start(input), f)
	if d.Step == nil || d.Step.Name != "llm/2" || len(d.Step.Model.New) != 2 || d.Step.Model.New[0].Role != agent.RoleTool || d.Step.Model.New[1].Role != agent.RoleUser || d.Step.Model.New[1].Content != "also check staging" {
		t.Fatalf("with a message for llm/2: %+v, want llm/2 with the tool result, then the message", d.Step)
	}

	f.Results["llm/2"] = reply(t, "done", agent.FinishStop)
	if d := loop.Next(agent.Start(input), f); d.Outcome == nil || d.Outcome.Status != agent.StatusCompleted || d.Checkpoint.Turn != 2 {
		t.Fatalf("after the answer: %+v, want Completed at turn 2", d)
	}
	f.AddMessage(agent.NextModelStep(2, 2), "one more thing")
	d = loop.Next(agent.Start(input), f)
	if d.Step == nil || d.Step.Name != "llm/3" || len(d.Step.Model.New) != 1 || d.Step.Model.New[0].Content != "one more thing" {
		t.Fatalf("with a message after the answer: %+v, want llm/3 with it", d.Step)
	}
	f.Forget(d.Checkpoint)
	if _, ok := f.Messages["llm/2"]; ok || len(f.Messages["llm/3"]) != 1 {
		t.Fatalf("after Forget at turn 2: %v, want only llm/3's message", f.Messages)
	}
}
