package e2e

import (
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// freezeTimeout is create_ticket's timeout in the freeze tests: the
// deadline of each attempt is its start plus this.
const freezeTimeout = 30 * time.Second

// TestFrozenWorkerWrite: a worker is frozen (SIGSTOP) inside create_ticket
// after the guard recorded its start and before the ticket is filed;
// Temporal times the attempt out (heartbeat) and retries it on a second
// worker; the frozen worker is resumed (SIGCONT) once the retry settled the
// write, and carries on into the tool. The fence keeps it to one ticket:
//
//   - probe only: the retry waits (state shows it) until the frozen
//     attempt's deadline plus the grace, then probes (no ticket) and files
//     it; the resumed worker's tool does not run: 1 ticket, Completed;
//   - neither key nor probe: the retry parks Indeterminate at once, naming
//     the frozen attempt and its deadline; a person's retry is refused
//     until then and accepted after: 1 ticket, Completed;
//   - key only: the retry runs at once with the same key: 1 ticket,
//     Completed, no person.
//
// Without the fence each of the first two filed a second ticket when the
// frozen worker resumed.
func TestFrozenWorkerWrite(t *testing.T) {
	srv := testenv.DevServer(t)
	with := func(settle map[string]any) map[string]any {
		o := map[string]any{"timeout": freezeTimeout.String()}
		maps.Copy(o, settle)
		return o
	}
	for _, tc := range []struct {
		name     string
		override map[string]any
	}{
		{"probe", with(testenv.ProbeByTitle)},
		{"none", with(nil)},
		{"key", with(keyOnly)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, srv)
			toolsEnv := ticketTools(t, tc.override)
			run := "frozen-" + tc.name
			w1 := testenv.Start(t, f.env(toolsEnv, testenv.HoldBefore+"=create_ticket", "AGENTRUN_TEST_HOLD_FOR=45s",
				// One step at a time: frozen inside the write, it has no poll
				// open that would take Temporal's retry of it.
				"AGENTRUN_MAX_ACTIVITIES=1"), testenv.Program(t, "worker"))
			if code, out := testenv.Run(t, f.env(toolsEnv), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
				t.Fatalf("starter: exit %d\n%s", code, out)
			}
			waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
			f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
			testenv.WaitFor(t, time.Minute, "the worker to hold create_ticket", func() bool {
				return strings.Contains(w1.Output(), "hold before create_ticket: holding for")
			})
			if err := w1.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			frozen := time.Now()
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					if err := w1.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Cleanup(resume)
			w2 := testenv.Start(t, f.env(toolsEnv), testenv.Program(t, "worker"))
			t.Cleanup(func() {
				if t.Failed() {
					st, err := state(t, srv, run)
					t.Logf("state %+v (%v)\nfrozen worker:\n%s\nsecond worker:\n%s\nhistory:\n%s", st, err, w1.Output(), w2.Output(),
						f.temporal(t, "workflow", "show", "-w", run))
				}
			})

			switch tc.name {
			case "probe":
				st := waitFence(t, srv, run, true)
				code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "show", run)
				if !strings.Contains(out, "fence: "+ticketStep) || !strings.Contains(out, "the run waits until then") {
					t.Errorf("reconcile show (exit %d) does not say what the run waits for:\n%s", code, out)
				}
				// A frozen worker sends no word of its attempt: the run
				// learns of it from the retry, which says the attempt before
				// it did not finish.
				if !strings.Contains(out, "retrying "+ticketStep+": attempt 2") || !strings.Contains(out, "attempt 1 did not finish (its worker stopped answering") {
					t.Errorf("reconcile show (exit %d) does not show the retry of the frozen attempt:\n%s", code, out)
				}
				// The frozen attempt started just before the freeze: its fence
				// ends its tool's timeout plus the grace after that.
				if u := st.Fence.Until; u.Before(frozen.Add(freezeTimeout)) || u.After(frozen.Add(freezeTimeout+fence.Grace+time.Second)) {
					t.Errorf("the fence ends %s after the freeze, want the tool's timeout %s plus the grace %s", u.Sub(frozen), freezeTimeout, fence.Grace)
				}
			case "none":
				st := waitStatus(t, srv, run, "Indeterminate", 3*time.Minute)
				if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "show", run); !strings.Contains(out, "fence: "+ticketStep+": attempt 1") || !strings.Contains(out, "a retry is refused until then") {
					t.Errorf("reconcile show (exit %d) does not name the attempt that may still run:\n%s", code, out)
				}
				if st.Fence == nil || st.Fence.Step != ticketStep || !strings.Contains(st.Why, "may still be running until") {
					t.Fatalf("Indeterminate without the frozen attempt named: fence %+v, why %q", st.Fence, st.Why)
				}
				code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "retry", run, ticketStep)
				if code == 0 || !strings.Contains(out, "may still be running until") || strings.Count(strings.TrimSpace(out), "\n") > 2 {
					t.Fatalf("reconcile retry while the frozen attempt may run: exit %d, want a refusal naming the deadline:\n%s", code, out)
				}
				testenv.WaitFor(t, time.Minute, "the frozen attempt's deadline to pass", func() bool { return time.Now().After(st.Fence.Until) })
				if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "retry", run, ticketStep); code != 0 {
					t.Fatalf("reconcile retry after the deadline: exit %d\n%s", code, out)
				}
			}
			waitStatus(t, srv, run, "Completed", 2*time.Minute)
			if n := f.ticketCount(t); n != 1 {
				t.Fatalf("tickets with the first worker still frozen: %d, want 1", n)
			}
			// The frozen worker carries on into create_ticket once resumed,
			// after its attempt's deadline: its tool must not file again.
			testenv.WaitFor(t, time.Minute, "45 s of pause to pass", func() bool { return time.Since(frozen) > 46*time.Second })
			resume()
			testenv.WaitFor(t, time.Minute, "the resumed worker to give up its write", func() bool {
				return strings.Contains(w1.Output(), "write attempt gave up")
			})
			if n := f.ticketCount(t); n != 1 {
				t.Fatalf("tickets after the frozen worker resumed: %d, want 1\n%s", n, w1.Output())
			}
			if calls := modelCalls(t, srv, run); calls != 3 {
				t.Errorf("model calls: %d, want 3", calls)
			}
		})
	}
}

// waitFence waits until the run's state shows that it waits for an
// earlier attempt of the ticket's write (Fence.Waiting).
func waitFence(t *testing.T, srv *testenv.Server, run string, waiting bool) workflows.State {
	t.Helper()
	var st workflows.State
	testenv.WaitFor(t, 3*time.Minute, run+" to wait for the frozen attempt", func() bool {
		s, err := state(t, srv, run)
		st = s
		return err == nil && s.Fence != nil && s.Fence.Step == ticketStep && s.Fence.Waiting == waiting
	})
	if !strings.Contains(currentDetails(t, srv, run), "may still be running until") {
		t.Errorf("the current details do not say what the run waits for")
	}
	return st
}
