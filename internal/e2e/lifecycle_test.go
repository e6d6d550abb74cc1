package e2e

import (
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/operator"
)

// TestApprovalExpiresWithNoWorker: with AGENTRUN_APPROVAL_TIMEOUT=3s the
// run waits for approval, its only worker is SIGKILLed, and the timer
// fires on the server with no worker running; a worker started later
// finds the call denied as expired, tells the model, and completes the run
// with no ticket and 3 model calls.
func TestApprovalExpiresWithNoWorker(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env("AGENTRUN_APPROVAL_TIMEOUT=3s")
	w := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-expire"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	w.Kill(t)
	killed := time.Now()

	// The timer fires with no worker: its TimerFired event is in the
	// history before any worker runs again.
	testenv.WaitFor(t, 30*time.Second, "the approval timer to fire", func() bool {
		return timerFired(t, srv, run)
	})
	if waited := time.Since(killed); waited < time.Second {
		t.Fatalf("the timer fired %s after the kill; want it to wait for the timeout", waited)
	}
	testenv.Start(t, env, testenv.Program(t, "worker"))
	st := waitStatus(t, srv, run, "Completed", time.Minute)
	if len(st.Expired) != 1 || st.Expired[0].Marker != ticketStep || st.Expired[0].After != "3s" {
		t.Fatalf("expired %+v, want %s after 3s", st.Expired, ticketStep)
	}
	if !strings.Contains(answer(t, srv, run), operator.ExpiredReason(3*time.Second)) {
		t.Fatalf("answer %q does not pass on what the model was told", answer(t, srv, run))
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}

func timerFired(t *testing.T, srv *testenv.Server, runID string) bool {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED {
			return true
		}
	}
	return false
}

// TestCancelDuringSlowRead: `reconcile cancel` while lookup runs (it would
// take 30s): the run ends Cancelled within seconds, the worker's lookup
// attempt ends, and no further step is scheduled.
func TestCancelDuringSlowRead(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env("AGENTRUN_DEMO_DELAY=30s")
	reconcile := testenv.Program(t, "reconcile") // built before the clock starts
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-cancel-read"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitRunning(t, srv, run, hand.LookupStep)
	start := time.Now()
	code, out := testenv.Run(t, env, time.Minute, reconcile, "cancel", run)
	took := time.Since(start)
	if code != cli.ExitCancelled || !strings.Contains(out, "run "+run+": Cancelled: "+agent.CancelledReason("")) {
		t.Fatalf("reconcile cancel: exit %d, want %d\n%s", code, cli.ExitCancelled, out)
	}
	if took > 15*time.Second {
		t.Fatalf("cancel took %s; want the run to end well before the 30s lookup", took)
	}
	desc, err := srv.Describe(t, run)
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Fatalf("workflow status %v, %v; want CANCELED", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	if n := modelCalls(t, srv, run); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
	code, out = testenv.Run(t, env, time.Minute, testenv.Program(t, "reconcile"), "cancel", run)
	if code != cli.ExitError || !strings.Contains(out, "already Cancelled") {
		t.Fatalf("second cancel: exit %d, want %d and already Cancelled\n%s", code, cli.ExitError, out)
	}
}

// TestCancelDuringWrite: `temporal workflow cancel` while create_ticket
// holds after writing the ticket: the run ends Cancelled and its state
// names the write as possibly taken effect; the ticket exists once.
func TestCancelDuringWrite(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(holdAfter("create_ticket"))
	w := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-cancel-write"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	testenv.WaitFor(t, time.Minute, "the worker to hold after create_ticket", func() bool {
		return strings.Contains(w.Output(), testenv.HoldLine(testenv.HoldAfter, "create_ticket"))
	})
	f.temporal(t, "workflow", "cancel", "-w", run)
	st := waitStatus(t, srv, run, "Cancelled", time.Minute)
	if st.InFlight != ticketStep || st.Reason != agent.CancelledReason(ticketStep) {
		t.Fatalf("state in flight %q, reason %q; want %s named", st.InFlight, st.Reason, ticketStep)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	if n := modelCalls(t, srv, run); n != 2 {
		t.Fatalf("model calls: %d, want 2", n)
	}
}

// waitRunning waits until activity id has started on a worker.
func waitRunning(t *testing.T, srv *testenv.Server, runID, id string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, id+" to run", func() bool {
		desc, err := srv.Describe(t, runID)
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityId() == id && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
}
