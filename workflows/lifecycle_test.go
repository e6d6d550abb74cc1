package workflows_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// withApprovalTimeout gives the harness's create_ticket an approval
// timeout.
func (h *harness) withApprovalTimeout(t *testing.T, d time.Duration) {
	t.Helper()
	demo := tools.Demo(tools.DemoConfig{Tickets: h.tickets})
	demo[1] = tools.Apply(demo[1], tools.Override{ApprovalTimeout: d})
	set, err := tools.NewSet(demo...)
	if err != nil {
		t.Fatal(err)
	}
	h.acts.Exec.Tools = set
}

// TestApprovalExpires: nobody decides the gated create_ticket within its
// 30-minute approval timeout, so the call is denied as expired, the model
// is told, and the run completes with no ticket and 3 model calls.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.withApprovalTimeout(t, 30*time.Minute)
	h.at(29*time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusAwaitingApproval || len(s.Expired) != 0 {
			t.Errorf("at 29m: status %s, expired %v; want AwaitingApproval, none expired", s.Status, s.Expired)
		}
	})
	h.run()
	r := h.result(t)
	s := h.state(t)
	if len(s.Expired) != 1 || s.Expired[0].Marker != ticketStep || s.Expired[0].After != "30m0s" {
		t.Fatalf("expired %+v, want %s after 30m0s", s.Expired, ticketStep)
	}
	if !strings.Contains(r.Answer, "approval expired after 30m0s") {
		t.Errorf("answer %q does not pass on the expiry the model was told", r.Answer)
	}
	if n := h.modelCalls(); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := h.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}

// TestApprovalBeforeExpiry: an approval inside the timeout cancels the
// timer; nothing expires.
func TestApprovalBeforeExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.withApprovalTimeout(t, 30*time.Minute)
	h.at(10*time.Minute, func() {
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	h.result(t)
	if s := h.state(t); len(s.Expired) != 0 {
		t.Fatalf("expired %+v, want none", s.Expired)
	}
	if n := h.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}

// TestCancelWhileAwaitingApproval: a cancelled run ends Cancelled, runs
// nothing more, and refuses operator input afterwards.
func TestCancelWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() { h.env.CancelWorkflow() })
	h.run()
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the run did not end")
	}
	var canceled *temporal.CanceledError
	if err := h.env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Fatalf("run error %v, want a CanceledError", err)
	}
	s := h.state(t)
	if s.Status != agent.StatusCancelled || s.InFlight != "" || len(s.Pending) != 0 {
		t.Fatalf("state %+v, want Cancelled with nothing in flight or pending", s)
	}
	if n := h.modelCalls(); n != 2 {
		t.Fatalf("model calls: %d, want 2", n)
	}
	if n := h.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}
