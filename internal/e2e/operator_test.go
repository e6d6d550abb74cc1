package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestOperatorRoughEdgesOnDevServer: a signal sent with a misspelled name
// (temporal workflow signal --name aprove) is recorded as rejected, naming
// the valid signals, in the state and the current details, and changes
// nothing; temporal workflow update execute --name approve answers with
// the state after the run acted on the approval (Running, nothing
// pending), not the one before. The history replays with the workflow
// (see replayHistory).
func TestOperatorRoughEdgesOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	const run = "e2e-operator"
	if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)

	f.temporal(t, "workflow", "signal", "-w", run, "--name", "aprove", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	const reason = `unknown signal "aprove"; the valid signals are approve, deny, reconcile, budget, message`
	testenv.WaitFor(t, 30*time.Second, "the misspelled signal recorded as rejected", func() bool {
		s, err := state(t, srv, run)
		return err == nil && len(s.Rejected) == 1 && s.Rejected[0].Signal == "aprove" && s.Rejected[0].Reason == reason
	})
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Awaiting approval**") || !strings.Contains(d, reason) {
		t.Fatalf("current details lack the rejection:\n%s", d)
	}
	if n := modelCalls(t, srv, run); n != 2 || f.ticketCount(t) != 0 {
		t.Fatalf("after the misspelled signal: %d model calls, %d tickets; want 2, 0", n, f.ticketCount(t))
	}

	out := f.temporal(t, "workflow", "update", "execute", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}), "--update-id", "approve-1")
	if !strings.Contains(out, "status:Running") || strings.Contains(out, "pending:") {
		t.Fatalf("update execute approve answered with the state before the approval:\n%s", out)
	}
	code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n, k := modelCalls(t, srv, run), f.ticketCount(t); n != 3 || k != 1 {
		t.Fatalf("model calls %d, tickets %d; want 3, 1", n, k)
	}

	replayHistory(t, f, run)
}

// replayHistory replays the run's history (temporal workflow show --output
// json) with the workflow as it is. With AGENTRUN_HISTORY_DIR set it keeps
// the history there as RUN.json, for workflows/testdata.
func replayHistory(t *testing.T, f *fleet, runID string) {
	t.Helper()
	dir := os.Getenv("AGENTRUN_HISTORY_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	file := filepath.Join(dir, runID+".json")
	if err := os.WriteFile(file, []byte(f.temporal(t, "workflow", "show", "-w", runID, "--output", "json")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := workflows.ReplayFile(file, runID, worker.WorkflowReplayerOptions{}); err != nil {
		t.Fatalf("replay %s: %v", runID, err)
	}
}
