package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestBudgetOnDevServer: a run started with --max-turns 1 stops as
// BudgetExceeded after exactly one model call (search attribute, current
// details with the command that raises it, state with limits and usage);
// a budget not above what is used is refused by the update and recorded
// as rejected when signalled; a real temporal update raises it, the run
// goes on to the approval and stops again at two model calls; reconcile
// budget raises it again and the run completes after three, with one
// ticket. The history replays.
func TestBudgetOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-budget"

	if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, "--max-turns", "1", prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "BudgetExceeded", time.Minute)
	if st.Reason != "the run made 1 model calls; its limit is 1" || st.Turns != 1 || st.Budget != (agent.Budget{MaxTurns: 1}) || st.Usage.Total() == 0 {
		t.Fatalf("state at the limit: %+v", st)
	}
	if n := modelCalls(t, srv, run); n != 1 {
		t.Fatalf("model calls at the limit: %d, want 1", n)
	}
	f.waitListed(t, run, `AgentRunStatus="BudgetExceeded"`)
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Budget exceeded**: the run made 1 model calls; its limit is 1") || !strings.Contains(d, "--name budget") || !strings.Contains(d, `'{"MaxTurns":2,"MaxTokens":0}'`) {
		t.Fatalf("current details:\n%s", d)
	}

	// Refused: not above what is used (the update), negative (the signal).
	if code, out := testenv.Run(t, f.env(), time.Minute, reconcile, "budget", run, "1"); code != 1 || !strings.Contains(out, "budget refused: invalid budget: MaxTurns 1 is not above the 1 model calls the run made") {
		t.Fatalf("reconcile budget 1: exit %d\n%s", code, out)
	}
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "budget", "--input", `{"MaxTurns":-1}`)
	testenv.WaitFor(t, 30*time.Second, "the negative budget recorded as rejected", func() bool {
		s, err := state(t, srv, run)
		return err == nil && len(s.Rejected) == 1 && strings.Contains(s.Rejected[0].Reason, "MaxTurns -1 is negative")
	})

	out := f.temporal(t, "workflow", "update", "execute", "-w", run, "--name", "budget", "--input", `{"MaxTurns": 2, "MaxTokens": 200000}`, "--update-id", "budget-2")
	if !strings.Contains(out, "budget-2") || !strings.Contains(out, "status:Running") {
		t.Fatalf("update execute budget: want the answer once the run goes on (Running)\n%s", out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if n := modelCalls(t, srv, run); n != 2 {
		t.Fatalf("model calls after the first raise: %d, want 2", n)
	}
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	st = waitStatus(t, srv, run, "BudgetExceeded", time.Minute)
	if n := modelCalls(t, srv, run); n != 2 || st.Turns != 2 || st.Budget != (agent.Budget{MaxTurns: 2, MaxTokens: 200000}) || f.ticketCount(t) != 1 {
		t.Fatalf("after the approval: %d model calls, %d tickets, state %+v; want 2, 1, BudgetExceeded at MaxTurns 2", n, f.ticketCount(t), st)
	}
	if code, out := testenv.Run(t, f.env(), time.Minute, reconcile, "budget", run, "3"); code != 0 || !strings.Contains(out, "budget accepted by run "+run+"; it is now Running") {
		t.Fatalf("reconcile budget 3: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n, k := modelCalls(t, srv, run), f.ticketCount(t); n != 3 || k != 1 {
		t.Fatalf("model calls %d, tickets %d; want 3, 1", n, k)
	}
	if s := statusAttr(t, srv, run); s != "Completed" {
		t.Fatalf("AgentRunStatus %s, want Completed", s)
	}
	replayHistory(t, f, run)
}
