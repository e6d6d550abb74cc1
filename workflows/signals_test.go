package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// TestMisspelledSignal: a signal under a name the run does not handle is
// recorded as rejected, naming the valid signals, and changes nothing; the
// run goes on when the right name follows.
func TestMisspelledSignal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		h.env.SignalWorkflow("aprove", map[string]string{"Marker": ticketStep})
		h.env.SignalWorkflow("Approve", nil)
	})
	h.at(2*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval || len(s.Rejected) != 2 {
			t.Fatalf("after misspelled signals: %s with rejected %+v, want AwaitingApproval and 2 rejected", s.Status, s.Rejected)
		}
		want := []workflows.Rejected{
			{Signal: "aprove", Payload: `{"Marker":"` + ticketStep + `"}`, Reason: `unknown signal "aprove"; the valid signals are approve, deny, reconcile, budget, message`},
			{Signal: "Approve", Payload: "", Reason: `unknown signal "Approve"; the valid signals are approve, deny, reconcile, budget, message`},
		}
		for i, w := range want {
			if s.Rejected[i] != w {
				t.Errorf("rejected[%d] = %+v, want %+v", i, s.Rejected[i], w)
			}
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d model calls, %d tickets; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
}

// TestWaitingQuery: the operator's list asks the cluster for the running
// runs whose status waits on a person.
func TestWaitingQuery(t *testing.T) {
	t.Parallel()
	const want = `ExecutionStatus = "Running" AND AgentRunStatus IN ("AwaitingApproval", "Indeterminate", "BudgetExceeded")`
	if got := workflows.WaitingQuery(); got != want {
		t.Fatalf("WaitingQuery() = %s, want %s", got, want)
	}
}
