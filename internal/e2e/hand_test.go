package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestHandExampleOnDevServer runs the hand example end to end: a real
// worker, the starter, an approval with the real temporal workflow signal
// command, and the starter attached with --wait until the answer. The
// worker has no versioning settings, and the run belongs to no worker
// deployment.
func TestHandExampleOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	worker := testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	const run = "e2e-hand"

	code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, prompt)
	if code != 0 || !strings.Contains(out, "started run e2e-hand") || !strings.Contains(out, "/namespaces/default/workflows/e2e-hand") {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if len(st.Pending) != 1 || st.Pending[0].Marker != ticketStep || st.Model != "scripted" {
		t.Fatalf("awaiting state: %+v", st)
	}
	f.waitListed(t, run, `AgentRunStatus="AwaitingApproval" AND AgentRunStep="`+ticketStep+`"`)

	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))

	code, out = testenv.Run(t, f.env(), time.Minute, starter, "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, "attached to run e2e-hand") || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	final, err := state(t, srv, run)
	if err != nil || final.Status != agent.StatusCompleted || len(final.Steps) != 5 {
		t.Fatalf("final state %+v, %v", final, err)
	}
	desc, err := srv.Describe(t, run)
	if err != nil {
		t.Fatal(err)
	}
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	if got := string(sa[workflows.StatusKey.GetName()].GetData()); got != `"Completed"` {
		t.Fatalf("AgentRunStatus = %s, want Completed", got)
	}
	// A worker without AGENTRUN_DEPLOYMENT is unversioned, as before Worker
	// Versioning: the run belongs to no deployment version.
	if vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo(); vi != nil {
		t.Fatalf("an unversioned worker's run has versioning info %v, want none", vi)
	}

	// A graceful stop: SIGTERM, exit 0.
	if err := worker.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := worker.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d after SIGTERM:\n%s", code, worker.Output())
	}
}

// TestShowPrintsWhatUnblocksOnTemporal: reconcile show of a run awaiting
// approval prints, as the local engine's does, the commands that approve
// and deny it, each with its Temporal CLI equivalent; the CLI is on PATH
// here, so it is named "temporal", and the printed signal works as
// printed: the run completes with one ticket and three model calls.
func TestShowPrintsWhatUnblocksOnTemporal(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env("PATH=" + filepath.Dir(srv.CLI) + string(os.PathListSeparator) + os.Getenv("PATH"))
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-show"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	code, out := testenv.Run(t, env, time.Minute, reconcile, "show", run)
	signal := `temporal workflow signal -w e2e-show --name approve --input '{"Marker":"tool/2/0/create_ticket"}'`
	for _, want := range []string{
		"run e2e-show: AwaitingApproval (workflow running)\n  marker " + ticketStep + "\n    tool: create_ticket\n",
		"    approve: " + reconcile + " approve e2e-show " + ticketStep + "\n         or: " + signal + "\n",
		"    deny:    " + reconcile + " deny e2e-show " + ticketStep + " REASON\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	sh := exec.CommandContext(t.Context(), "sh", "-c", signal)
	sh.Env = env
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the printed command %s: %v\n%s", signal, err, b)
	}
	waitStatus(t, srv, run, "Completed", time.Minute)
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}
