package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// TestWatchersDoNotBlockApproval: 12 `starter --wait` watchers follow a
// parked run (each one's stream subscriber long-polls the run by update;
// the server admits 10 updates in flight per run). `reconcile approve` is
// still admitted and answered within seconds, the run completes with one
// ticket and every watcher sees it end. Then, with the worker stopped,
// `reconcile show` of the completed run shows its status, its answer and
// its steps from the history, saying the live state needs a worker.
func TestWatchersDoNotBlockApproval(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	const run = "e2e-watchers"
	f, w := parkRun(t, srv, run)
	env := f.env()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	var watchers []*testenv.Proc
	for range 12 {
		watchers = append(watchers, testenv.Start(t, env, starter, "--id", run, "--wait"))
	}
	// Each watcher prints where the run stands once it follows it: its
	// subscriber polls from before that line.
	testenv.WaitFor(t, time.Minute, "12 watchers to follow the run", func() bool {
		for _, p := range watchers {
			if !strings.Contains(p.Output(), "AwaitingApproval") {
				return false
			}
		}
		return true
	})
	// Give the last polls time to reach the run (nothing outside the run
	// shows a waiting poll).
	time.Sleep(3 * time.Second)

	start := time.Now()
	code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep)
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "approve accepted by run "+run) {
		t.Fatalf("approve with 12 watchers: exit %d after %s\n%s", code, took, out)
	}
	if took > 8*time.Second {
		t.Fatalf("approve with 12 watchers took %s; want it applied within seconds", took)
	}
	waitStatus(t, srv, run, "Completed", time.Minute)
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	for i, p := range watchers {
		if c := p.Wait(t, time.Minute); c != 0 || !strings.Contains(p.Output(), "run "+run+": Completed") {
			t.Fatalf("watcher %d: exit %d\n%s", i, c, p.Output())
		}
	}

	w.Kill(t)
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run)
	for _, want := range []string{
		"run " + run + ": Completed (workflow completed; from the server's history: the live state needs a running worker on task queue " + f.queue,
		"  answer: Your request is filed as TICKET-1.",
		"  llm/1                        model completed",
		"  " + ticketStep + "       tool  completed",
		"  llm/3                        model completed",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show with no worker: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}

// TestApproveFallsBackToSignal: with no worker, 10 stream polls are
// admitted to a parked run and wait; the server then admits no more
// updates for it, so `reconcile approve` sends its approval as a signal
// and says so in one line. `reconcile show` of the parked run, still with
// no worker, shows its status and pending marker from the history. A
// worker started afterwards applies the approval (the host keeps its
// MaxOpenPolls polls and refuses the others) and the run completes with
// one ticket.
func TestApproveFallsBackToSignal(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	const run = "e2e-fallback"
	f, w := parkRun(t, srv, run)
	env := f.env()
	reconcile := testenv.Program(t, "reconcile")
	w.Kill(t)

	// Ten polls far past the end of the log, sent with no worker: the
	// server admits them and they wait for a workflow task.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range 10 {
		wg.Go(func() {
			_, _ = srv.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: run, UpdateName: streams.PollUpdate,
				Args:         []any{streams.PollInput{Topics: []string{}, FromOffset: 1 << 40}},
				WaitForStage: client.WorkflowUpdateStageAccepted,
			})
		})
	}
	time.Sleep(2 * time.Second) // the polls reach the server

	code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep)
	if code != 0 || !strings.Contains(out, "approve sent to run "+run+" as a signal: the run admits no more updates now") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("approve with full update slots: exit %d, want one line saying it went as a signal\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run)
	for _, want := range []string{
		"run " + run + ": AwaitingApproval (workflow running; from the server's history: the live state needs a running worker",
		"  pending: " + ticketStep,
		"  llm/2                        model completed",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show with no worker: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	testenv.Start(t, env, testenv.Program(t, "worker"))
	waitStatus(t, srv, run, "Completed", time.Minute)
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}

// TestRejectedSignalFlood: 60 approve signals of 1 MiB each, every one
// refused (an unknown field), to a parked run on a dev server, each sent as
// soon as the run recorded the one before: 60 MiB of signals, past the
// 50 MiB a run's history may hold. Each pad is 1 MiB of random bytes (in
// base64), so that it stays 1 MiB in the history when a payload codec
// compresses before it encrypts (make test-encrypted). The run continues as
// new from its wait when the server suggests it, carrying its pending call
// and its count of refusals, survives, and completes with one ticket on
// the approval that follows.
func TestRejectedSignalFlood(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env()
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-flood"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	const flood = 60
	noise := make([]byte, 1<<20)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	pad := base64.StdEncoding.EncodeToString(noise)
	var st workflows.State
	for i := range flood {
		err := srv.Client.SignalWorkflow(t.Context(), run, "", "approve", map[string]string{"Marker": ticketStep, "Pad": pad})
		if err != nil {
			t.Fatalf("signal %d: %v", i, err)
		}
		// Each signal once the run recorded the one before: as fast as
		// the worker takes them. (Faster than a continue-as-new can
		// complete, signals reach the history before the run sees them;
		// see the fixed limits in docs/configuration.md.)
		testenv.WaitFor(t, time.Minute, "the run to record the refusals", func() bool {
			s, err := state(t, srv, run)
			st = s
			return err == nil && s.Rejects == i+1
		})
	}
	if st.Status != "AwaitingApproval" || st.Runs == 0 || len(st.Pending) != 1 || st.Pending[0].Marker != ticketStep {
		t.Fatalf("after the flood: %s after %d continue-as-new, pending %+v; want AwaitingApproval on %s after at least one", st.Status, st.Runs, st.Pending, ticketStep)
	}
	code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "reconcile"), "approve", run, ticketStep)
	if code != 0 {
		t.Fatalf("approve after the flood: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "Completed", time.Minute)
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	t.Logf("%d refused signals of 1 MiB: the run continued as new %d times", flood, st.Runs)
}

// parkRun starts a worker on a new fleet and the hand example as run, and
// waits until the run awaits approval. It returns the fleet and the worker.
func parkRun(t *testing.T, srv *testenv.Server, run string) (*fleet, *testenv.Proc) {
	t.Helper()
	f := newFleet(t, srv)
	w := testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	return f, w
}
