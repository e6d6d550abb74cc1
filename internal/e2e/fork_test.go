package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestForkThroughReconcile: the hand example on a worker process, then
// forks of it through the reconcile program. Before its ticket: refused
// in one line naming the write, exit non-zero, nothing started. After its
// approval with a system prompt of its own: one model call, no new
// ticket, its lineage in show. A replay from the start (eval): the drift
// line, the summary with 0 tool executions, still one ticket.
func TestForkThroughReconcile(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env()
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-fork-hand"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "Completed", time.Minute)

	code, out := testenv.Run(t, env, time.Minute, reconcile, "fork", run, "--from", "llm/2", "--id", "e2e-fork-refused")
	if code == 0 || !strings.Contains(out, "tool/2/0/create_ticket (returned") || !strings.Contains(out, "--ack-writes") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("fork before the ticket: exit %d; want a one-line refusal naming the write:\n%s", code, out)
	}

	system := filepath.Join(t.TempDir(), "system.txt")
	if err := os.WriteFile(system, []byte("Answer in one line."), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "fork", run, "--from", "llm/3", "--system", system, "--id", "e2e-fork-after")
	if code != 0 || !strings.Contains(out, "run e2e-fork-after: a fork of run e2e-fork-hand from llm/3") {
		t.Fatalf("fork after the approval: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, "e2e-fork-after", "Completed", time.Minute)
	if n, tickets := modelCalls(t, srv, "e2e-fork-after"), f.ticketCount(t); n != 1 || tickets != 1 {
		t.Fatalf("fork after the approval: %d model calls, %d tickets; want 1 and 1", n, tickets)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", "e2e-fork-after")
	if code != 0 || !strings.Contains(out, "lineage: fork of e2e-fork-hand from llm/3 (a new system prompt)") {
		t.Fatalf("show of the fork: exit %d\n%s", code, out)
	}

	code, out = testenv.Run(t, env, 2*time.Minute, reconcile, "eval", "--from", "llm/1", run)
	if code != 0 || !strings.Contains(out, "runs  departed  unchanged  tool executions\n   1         0          1                0") {
		t.Fatalf("eval: exit %d\n%s", code, out)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets after the eval: %d; want 1", n)
	}
}
