package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
)

// TestTemporalKill: five workers on one task queue; the one running lookup
// is SIGKILLed, then the one running create_ticket after the ticket is
// written. The read is retried elsewhere; the write becomes Indeterminate,
// is found by its search attribute, is reconciled with done through a
// signal, and the run completes with 3 model calls and 1 ticket.
func TestTemporalKill(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	workers := map[int]*testenv.Proc{}
	for range 5 {
		p := testenv.Start(t, f.env("AGENTRUN_DEMO_DELAY=3s"), testenv.Program(t, "worker"))
		workers[p.Cmd.Process.Pid] = p
	}
	const run = "e2e-kill"
	code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt)
	if code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}

	// The worker running lookup dies mid-step.
	killRunning(t, srv, workers, run, hand.LookupStep, nil)
	waitStatus(t, srv, run, "AwaitingApproval", 2*time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))

	// The worker running create_ticket dies after the ticket exists.
	killRunning(t, srv, workers, run, ticketStep, func() bool { return f.ticketCount(t) == 1 })
	st := waitStatus(t, srv, run, "Indeterminate", 2*time.Minute)
	if st.Indeterminate != ticketStep {
		t.Fatalf("indeterminate step %q, want %s", st.Indeterminate, ticketStep)
	}
	f.waitListed(t, run, `AgentRunStatus="Indeterminate"`)
	ts, err := tools.ReadTickets(f.tickets)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tickets %v, %v; want exactly 1", ts, err)
	}
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "reconcile",
		"--input", testenv.MustJSON(map[string]string{"Step": ticketStep, "Outcome": "done", "Result": ts[0].ID}))

	var answer string
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &struct {
		Answer *string `json:"answer"`
	}{&answer}); err != nil {
		t.Fatalf("run result: %v", err)
	}
	if !strings.Contains(answer, ts[0].ID) {
		t.Fatalf("answer %q does not name the reconciled %s", answer, ts[0].ID)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}

// killRunning waits until activity id runs on one of the workers (and
// ready holds, if given), then SIGKILLs that worker.
func killRunning(t *testing.T, srv *testenv.Server, workers map[int]*testenv.Proc, runID, id string, ready func() bool) {
	t.Helper()
	w := runningOn(t, srv, workers, runID, id, ready)
	w.Kill(t)
	t.Logf("SIGKILLed worker %d while it ran %s", w.Cmd.Process.Pid, id)
}

// runningOn waits until activity id runs on one of the workers (and ready
// holds, if given), and returns that worker.
func runningOn(t *testing.T, srv *testenv.Server, workers map[int]*testenv.Proc, runID, id string, ready func() bool) *testenv.Proc {
	t.Helper()
	pid := 0
	testenv.WaitFor(t, 2*time.Minute, id+" to run on a worker", func() bool {
		desc, err := srv.Describe(t, runID)
		if err != nil {
			return false
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityId() != id || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				continue
			}
			// The sdk's default identity is "PID@HOST@".
			n, err := strconv.Atoi(strings.SplitN(a.GetLastWorkerIdentity(), "@", 2)[0])
			if err == nil && workers[n] != nil && workers[n].Running() {
				pid = n
			}
		}
		return pid != 0 && (ready == nil || ready())
	})
	return workers[pid]
}

// TestKillHoldingToolList: the worker holding the run's first activity
// (the tool list) dies. The step heartbeats like the others, so a second
// worker takes it over within the heartbeat timeout, not after the list's
// one-minute start-to-close timeout, and the run goes on to its approval.
func TestKillHoldingToolList(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	w1 := testenv.Start(t, f.env("AGENTRUN_TEST_HOLD_LIST=1"), testenv.Program(t, "worker"))
	const run = "e2e-kill-list"
	if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	killRunning(t, srv, map[int]*testenv.Proc{w1.Cmd.Process.Pid: w1}, run, "tools", func() bool {
		return strings.Contains(w1.Output(), "hold in tools: waiting to be killed")
	})
	killed := time.Now()
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	// Heartbeat timeout (5 s), the retry's first interval (1 s), the next
	// workflow task's wait on the dead worker's sticky queue (5 s), and a
	// second worker starting: well under the minute it took before.
	took := time.Since(killed)
	t.Logf("the run reached its approval %v after the kill", took.Round(100*time.Millisecond))
	if took > 25*time.Second {
		t.Fatalf("the run reached its approval %v after the kill, want within 25s", took.Round(time.Second))
	}
	h := history(t, srv, run)
	if h.attempts["tools"] != 2 || h.attempts["llm/1"] != 1 {
		t.Fatalf("attempts %v, want tools 2 (the held one timed out) and llm/1 1", h.attempts)
	}
}
