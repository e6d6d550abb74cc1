package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// eventCount counts the events in the history of a run's latest execution.
func eventCount(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestTerminalBarrierOnDevServer: after a run Completed, every operator
// input is refused naming the status: reconcile's commands (updates) with
// a one-line error, the temporal CLI's signal and update by the server;
// the run's history gains nothing.
func TestTerminalBarrierOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	script := filepath.Join(f.dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"Nothing to do."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := f.env("AGENTRUN_MODEL=scripted:" + script)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-barrier"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", "hello"); code != 0 || !strings.Contains(out, "Nothing to do.") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	events := eventCount(t, srv, run)

	reconcile := testenv.Program(t, "reconcile")
	for _, args := range [][]string{
		{"approve", run, "tool/1/0/create_ticket"},
		{"deny", run, "tool/1/0/create_ticket", "no"},
		{"retry", run, "tool/1/0/create_ticket"},
		{"budget", run, "40"},
	} {
		code, out := testenv.Run(t, env, time.Minute, reconcile, args...)
		want := args[0] + " refused: run " + run + " is already Completed; nothing changes a run after it ended"
		if line := strings.TrimSpace(out); code != 1 || !strings.Contains(line, want) || strings.Contains(line, "\n") {
			t.Errorf("reconcile %q: exit %d, output %q; want exit 1 and one line containing %q", args, code, out, want)
		}
	}
	for _, args := range [][]string{
		{"workflow", "signal", "-w", run, "--name", "budget", "--input", `{"MaxTurns":40}`},
		{"workflow", "update", "execute", "-w", run, "--name", "budget", "--input", `{"MaxTurns":40}`, "--update-id", "late"},
	} {
		args = append(args, "--address", srv.HostPort, "--namespace", "default")
		code, out := testenv.Run(t, os.Environ(), time.Minute, srv.CLI, args...)
		if code == 0 || !strings.Contains(out, "completed") {
			t.Errorf("temporal %s: exit %d, want refused as completed\n%s", strings.Join(args[:2], " "), code, out)
		}
	}
	if n := eventCount(t, srv, run); n != events {
		t.Fatalf("history: %d events after the refusals, %d before", n, events)
	}
	if s := statusAttr(t, srv, run); s != "Completed" {
		t.Fatalf("AgentRunStatus %s, want Completed", s)
	}
}
