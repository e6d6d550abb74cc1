package workflows_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// echoScript answers each model call N with "answer N: " and the newest
// user message.
func echoScript(turns int) llm.Script {
	var s llm.Script
	for i := 1; i <= turns; i++ {
		s.Turns = append(s.Turns, llm.Turn{Text: fmt.Sprintf("answer %d: %s", i, llm.LastUserMessage)})
	}
	return s
}

// TestMessageToWaitingRun: a message sent (by update) while the hand
// example awaits approval is given to the next model call, after the
// ticket's result: llm/3 reads it. Exactly 3 model calls.
func TestMessageToWaitingRun(t *testing.T) {
	t.Parallel()
	script := llm.HandExample()
	script.Turns[2].Text = "Filed " + llm.LastToolResult + "; you said: " + llm.LastUserMessage
	h := newScriptHarness(t, script)
	var answered workflows.State
	h.at(time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusAwaitingApproval || h.modelCalls() != 2 {
			t.Errorf("before the message: %s after %d model calls, want AwaitingApproval after 2", s.Status, h.modelCalls())
		}
		h.env.UpdateWorkflow(operator.SignalMessage, "m1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { t.Errorf("message refused: %v", err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("message: %v", err)
					return
				}
				answered = v.(workflows.State)
			},
		}, jsonPayload(`{"Content": "also check the staging database"}`))
	})
	h.at(2*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval || s.Messages != 1 || s.MessageStep != "llm/3" || h.modelCalls() != 2 {
			t.Errorf("after the message: %s, %d messages for %q after %d model calls; want AwaitingApproval, 1 for llm/3, 2 calls", s.Status, s.Messages, s.MessageStep, h.modelCalls())
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt)})
	r := h.result(t)
	if r.Answer != "Filed TICKET-1; you said: also check the staging database" || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q after %d model calls, %d tickets; want the message in llm/3's input, 3 calls, 1 ticket", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
	if answered.Status != agent.StatusAwaitingApproval || answered.MessageStep != "llm/3" {
		t.Fatalf("the update answered %s for %q, want AwaitingApproval for llm/3", answered.Status, answered.MessageStep)
	}
	// The answer, which the history records, leaves the lists to the
	// state query: no steps, only their count.
	if len(answered.Steps) != 0 || answered.StepCount < 3 || answered.Answer != "" {
		t.Fatalf("the update answered %d steps of %d and answer %q; want none of them listed, their count, no answer", len(answered.Steps), answered.StepCount, answered.Answer)
	}
}

// TestSessionAcrossContinueAsNew: a session answers its prompt and three
// messages in order, one model call each (llm/1..llm/4), continuing as new
// before every step, waits Idle between them, and completes with its last
// answer when the idle time passes with no message.
func TestSessionAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, echoScript(5))
	msgs := []string{"first follow-up", "second follow-up", "third follow-up"}
	var idle []workflows.State
	inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages("hello"), Session: true, SessionIdle: "1h", ContinueAfter: 1}, func(run int) {
		h.at(time.Minute, func() {
			s := h.state(t)
			idle = append(idle, s)
			if run < len(msgs) {
				h.env.SignalWorkflow(operator.SignalMessage, map[string]string{"Content": msgs[run]})
			}
		})
	})
	if len(inputs) != 4 {
		t.Fatalf("%d executions, want 4 (one per model call)", len(inputs))
	}
	for i, in := range inputs[1:] {
		if !in.Session || in.SessionIdle != "1h" {
			t.Fatalf("execution %d lost the session: %+v", i+1, in)
		}
	}
	r := h.result(t)
	if r.Answer != "answer 4: third follow-up" || h.modelCalls() != 4 {
		t.Fatalf("answer %q after %d model calls, want answer 4 to the third message after 4", r.Answer, h.modelCalls())
	}
	want := []string{"answer 1: hello", "answer 2: first follow-up", "answer 3: second follow-up", "answer 4: third follow-up"}
	if len(idle) != len(want) {
		t.Fatalf("%d idle states, want %d", len(idle), len(want))
	}
	for i, s := range idle {
		if s.Status != agent.StatusIdle || s.Answer != want[i] || s.AnswerTurn != i+1 || s.Turns != i+1 {
			t.Errorf("idle %d: %s %q (turn %d of %d), want Idle %q at turn %d", i, s.Status, s.Answer, s.AnswerTurn, s.Turns, want[i], i+1)
		}
	}
	var ids []string
	for _, id := range h.ids {
		if strings.HasPrefix(id, "llm/") {
			ids = append(ids, id)
		}
	}
	if strings.Join(ids, " ") != "llm/1 llm/2 llm/3 llm/4" {
		t.Fatalf("model steps %v, want llm/1 to llm/4", ids)
	}
	if s := h.state(t); s.Status != agent.StatusCompleted || s.Runs != 3 {
		t.Fatalf("final state %s after %d continues, want Completed after 3", s.Status, s.Runs)
	}
}

// TestSessionIdleTimeout: a session with no message completes with its
// answer when its idle time passes, not before.
func TestSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, echoScript(1))
	h.at(29*time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusIdle || s.Answer != "answer 1: hello" || !s.Session || s.Idle != "30m0s" {
			t.Errorf("before the idle time: %+v, want Idle with answer 1", s)
		}
	})
	start := h.env.Now()
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages("hello"), Session: true, SessionIdle: "30m"})
	r := h.result(t)
	if r.Answer != "answer 1: hello" || h.modelCalls() != 1 {
		t.Fatalf("answer %q after %d model calls, want answer 1 after 1", r.Answer, h.modelCalls())
	}
	if d := h.env.Now().Sub(start); d < 30*time.Minute {
		t.Fatalf("completed after %s, want at least the idle time 30m", d)
	}
	if s := h.state(t); s.Status != agent.StatusCompleted {
		t.Fatalf("status %s, want Completed", s.Status)
	}
}

// TestSessionKeepsIdleTimer: a session answering messages at 1m, 10m and
// 20m keeps one idle timer across its turns (versionFewerActions): the first,
// started at the first answer, fires at 30m, before the last answer's idle
// time is up, and a second runs the rest, so the run completes at 50m
// (the last answer's idle time) after 2 timers, not 4.
func TestSessionKeepsIdleTimer(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, echoScript(4))
	var timers []time.Duration
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
	for i, at := range []time.Duration{time.Minute, 10 * time.Minute, 20 * time.Minute} {
		h.at(at, func() {
			if s := h.state(t); s.Status != agent.StatusIdle {
				t.Errorf("at %s: %s, want Idle", at, s.Status)
			}
			h.env.SignalWorkflow(operator.SignalMessage, map[string]string{"Content": fmt.Sprintf("message %d", i+1)})
		})
	}
	start := h.env.Now()
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages("hello"), Session: true, SessionIdle: "30m"})
	r := h.result(t)
	if r.Answer != "answer 4: message 3" || h.modelCalls() != 4 {
		t.Fatalf("answer %q after %d model calls, want answer 4 to message 3 after 4", r.Answer, h.modelCalls())
	}
	if d := h.env.Now().Sub(start); d < 50*time.Minute || d > 51*time.Minute {
		t.Fatalf("completed after %s, want 50m: the last answer's idle time", d)
	}
	if len(timers) != 2 || timers[0] != 30*time.Minute || timers[1] > 20*time.Minute || timers[1] < 19*time.Minute {
		t.Fatalf("idle timers %v, want 2: 30m from the first answer, then the 20m the last answer had left", timers)
	}
}

// TestBadMessage: an empty or blank message, or one with a field of
// another payload, is refused (the update with an error, the signal
// recorded as rejected) and changes nothing; a bad session_idle fails the
// run with a one-line reason.
func TestBadMessage(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, echoScript(2))
	var refused []string
	h.at(time.Minute, func() {
		for i, p := range []string{`{"Content": "   "}`, `{"Content": ""}`, `{"Marker": "x"}`} {
			h.env.UpdateWorkflow(operator.SignalMessage, fmt.Sprint("bad", i), &testsuite.TestUpdateCallback{
				OnAccept:   func() { t.Errorf("message %s accepted", p) },
				OnReject:   func(err error) { refused = append(refused, err.Error()) },
				OnComplete: func(any, error) {},
			}, jsonPayload(p))
		}
		h.env.SignalWorkflow(operator.SignalMessage, jsonPayload(`{"Content": "\n\t"}`))
	})
	h.at(2*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusIdle || s.Messages != 0 || len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0].Reason, "the content is empty") {
			t.Errorf("after bad messages: %s, %d messages, rejected %+v; want Idle, none taken, one rejected as empty", s.Status, s.Messages, s.Rejected)
		}
		h.env.SignalWorkflow(operator.SignalMessage, map[string]string{"Content": "good"})
	})
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages("hello"), Session: true, SessionIdle: "10m"})
	r := h.result(t)
	if r.Answer != "answer 2: good" || h.modelCalls() != 2 {
		t.Fatalf("answer %q after %d model calls, want answer 2 to the good message after 2", r.Answer, h.modelCalls())
	}
	if len(refused) != 3 || !strings.Contains(refused[0], "the content is empty; want some text") || !strings.Contains(refused[2], `unknown field "Marker"`) {
		t.Fatalf("refused %q, want two empty contents and an unknown field", refused)
	}

	bad := newScriptHarness(t, echoScript(1))
	bad.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages("hello"), Session: true, SessionIdle: "soon"})
	err := bad.env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), `session_idle "soon": want a positive Go duration`) || bad.modelCalls() != 0 {
		t.Fatalf("bad session_idle: %v after %d model calls, want a one-line error and no call", err, bad.modelCalls())
	}
}

// TestMessageToBudgetStoppedRun: a message to a run stopped as
// BudgetExceeded is taken (for llm/2) and the run still waits; once the
// budget is raised the model reads it. Exactly 1, then 3 model calls.
func TestMessageToBudgetStoppedRun(t *testing.T) {
	t.Parallel()
	script := llm.HandExample()
	script.Turns[2].Text = "Filed " + llm.LastToolResult + "; you said: " + llm.LastUserMessage
	h := newScriptHarness(t, script)
	h.at(time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusBudgetExceeded || h.modelCalls() != 1 {
			t.Errorf("at the limit: %s after %d model calls, want BudgetExceeded after 1", s.Status, h.modelCalls())
		}
		h.env.SignalWorkflow(operator.SignalMessage, map[string]string{"Content": "use the staging database"})
	})
	h.at(2*time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusBudgetExceeded || s.Messages != 1 || s.MessageStep != "llm/2" || h.modelCalls() != 1 {
			t.Errorf("after the message: %s, %d messages for %q after %d model calls; want BudgetExceeded, 1 for llm/2, 1 call", s.Status, s.Messages, s.MessageStep, h.modelCalls())
		}
		h.env.SignalWorkflow(operator.SignalBudget, map[string]int{"MaxTurns": 10})
	})
	h.at(3*time.Minute, func() {
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: 1})
	r := h.result(t)
	if r.Answer != "Filed TICKET-1; you said: use the staging database" || h.modelCalls() != 3 {
		t.Fatalf("answer %q after %d model calls, want the message read, 3 calls", r.Answer, h.modelCalls())
	}
}
