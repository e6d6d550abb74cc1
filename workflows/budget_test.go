package workflows_test

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// TestBudgetReachedThenRaised: the hand example with a limit of one model
// call stops as BudgetExceeded after llm/1 and waits; a budget not above
// what is used is refused (the update with an error, the signal recorded
// as rejected); raising MaxTurns lets it go on to the approval and the
// next limit; raising it again completes the run: exactly 1, 2 and 3 model
// calls.
func TestBudgetReachedThenRaised(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var refused string
	h.at(time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusBudgetExceeded || s.Reason != "the run made 1 model calls; its limit is 1" ||
			s.Turns != 1 || s.Budget != (agent.Budget{MaxTurns: 1}) || s.Usage.Total() == 0 || h.modelCalls() != 1 {
			t.Errorf("at the limit: %+v after %d model calls, want BudgetExceeded after 1", s, h.modelCalls())
		}
		h.env.UpdateWorkflow(operator.SignalBudget, "b1", &testsuite.TestUpdateCallback{
			OnAccept:   func() { t.Error("a budget of 1 was accepted") },
			OnReject:   func(err error) { refused = err.Error() },
			OnComplete: func(any, error) {},
		}, jsonPayload(`{"MaxTurns":1}`))
		h.env.SignalWorkflow(operator.SignalBudget, jsonPayload(`{"MaxTurns":-3}`))
		h.env.SignalWorkflow(operator.SignalBudget, jsonPayload(`{"MaxTurns":2}`))
	})
	h.at(2*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval || h.modelCalls() != 2 || len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0].Reason, "MaxTurns -3 is negative") {
			t.Errorf("after raising to 2: %+v after %d model calls, want AwaitingApproval after 2 and one rejected budget", s, h.modelCalls())
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.at(3*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusBudgetExceeded || h.modelCalls() != 2 || h.ticketCount(t) != 1 {
			t.Errorf("after the approval: %s after %d model calls, %d tickets; want BudgetExceeded after 2, 1 ticket", s.Status, h.modelCalls(), h.ticketCount(t))
		}
		h.env.SignalWorkflow(operator.SignalBudget, map[string]any{"MaxTurns": 40, "MaxTokens": 200000})
	})
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: 1})
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d model calls, %d tickets; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
	if !strings.Contains(refused, "MaxTurns 1 is not above the 1 model calls the run made; want at least 2") {
		t.Fatalf("update refused with %q, want the budget not above what is used", refused)
	}
	if s := h.state(t); s.Budget != (agent.Budget{MaxTurns: 40, MaxTokens: 200000}) || s.Turns != 3 {
		t.Fatalf("final budget %+v after %d calls, want 40 and 200000 after 3", s.Budget, s.Turns)
	}
}

// TestBudgetTokens: a run stops when its tokens reach max_tokens.
func TestBudgetTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusBudgetExceeded || !strings.Contains(s.Reason, "tokens; its limit is 1") || h.modelCalls() != 1 {
			t.Errorf("got %+v after %d model calls, want BudgetExceeded on tokens after 1", s, h.modelCalls())
		}
		h.env.CancelWorkflow()
	})
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt), MaxTokens: 1})
}

// TestBudgetAcrossContinueAsNew: a budget raised in one execution holds in
// the next.
func TestBudgetAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: 1, ContinueAfter: 3}, func(run int) {
		for i := 1; i <= 3; i++ {
			h.at(time.Duration(i)*time.Minute, func() {
				switch s := h.state(t); s.Status {
				case agent.StatusBudgetExceeded:
					h.env.SignalWorkflow(operator.SignalBudget, map[string]int{"MaxTurns": 5})
				case agent.StatusAwaitingApproval:
					h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
				}
			})
		}
	})
	r := h.result(t)
	if len(inputs) != 2 || inputs[1].MaxTurns != 5 {
		t.Fatalf("%d executions, the second with max_turns %d; want 2 and 5", len(inputs), inputs[len(inputs)-1].MaxTurns)
	}
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 {
		t.Fatalf("answer %q after %d model calls, want TICKET-1 after 3", r.Answer, h.modelCalls())
	}
	if s := h.state(t); s.Budget.MaxTurns != 5 {
		t.Fatalf("budget after the switch: %+v, want MaxTurns 5", s.Budget)
	}
}

// TestBudgetBadInput: a run started with a negative limit fails at once,
// saying what is valid, before any step.
func TestBudgetBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: -1})
	err := h.env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "the input has max_turns -1, max_tokens 0: want positive limits, or absent for 25 model calls and no token limit") {
		t.Fatalf("workflow error %v, want the bad limit named", err)
	}
	if n := h.modelCalls(); n != 0 {
		t.Fatalf("model calls: %d, want 0", n)
	}
}
