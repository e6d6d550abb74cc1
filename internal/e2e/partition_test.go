package e2e

import (
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/netfault"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
)

// partitionToolTimeout is create_ticket's timeout in TestPartitionWriteGivesUp:
// the cut-off attempt's deadline is its start plus this.
const partitionToolTimeout = 8 * time.Second

// TestPartitionWriteGivesUp: a worker talks to the Temporal frontend
// through a netfault proxy and holds the hand example's create_ticket
// before its effect (a probe by title, no key), for its timeout plus 3 s
// (AGENTRUN_TEST_HOLD_FOR), then goes on into the tool as a worker that
// does not know it was cut off would. The proxy is cut while it holds:
// Temporal times the attempt out and a second worker takes the run on. The
// cut-off worker's write gives up by itself, while the proxy is still cut:
// its attempt's deadline passed (no server is needed to know that), the
// tool refuses to act (tools.Live) and the worker logs "write attempt gave
// up". Then the proxy heals, and the run completes with exactly one
// ticket, filed by the second worker after the deadline and the grace.
func TestPartitionWriteGivesUp(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	run := "e2e-partition-write"
	override := maps.Clone(testenv.ProbeByTitle)
	override["timeout"] = partitionToolTimeout.String()
	toolsEnv := ticketTools(t, override)

	proxy, err := netfault.Start("temporal", srv.HostPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	holdFor := partitionToolTimeout + 3*time.Second
	w1 := testenv.Start(t, f.env(toolsEnv, testenv.HoldBefore+"=create_ticket", "AGENTRUN_TEST_HOLD_FOR="+holdFor.String(),
		"TEMPORAL_ADDRESS="+proxy.Addr()), testenv.Program(t, "worker"))
	if code, out := testenv.Run(t, f.env(toolsEnv), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	testenv.WaitFor(t, time.Minute, "the worker to hold create_ticket", func() bool {
		if !w1.Running() {
			t.Fatalf("the worker exited:\n%s", w1.Output())
		}
		return strings.Contains(w1.Output(), "hold before create_ticket: holding for "+holdFor.String())
	})

	proxy.Cut()
	cut := time.Now()
	t.Logf("cut the worker holding create_ticket off from the Temporal frontend")
	testenv.Start(t, f.env(toolsEnv), testenv.Program(t, "worker"))

	// The write must give up after its hold (it started before the cut)
	// and within a margin for a loaded machine; the proxy stays cut until
	// then.
	gaveUp := regexp.MustCompile(`msg="write attempt gave up[^"]*".* error="?([^"\n]+)`)
	var cause string
	bound := holdFor + 30*time.Second
	for {
		if m := gaveUp.FindStringSubmatch(w1.Output()); m != nil {
			cause = m[1]
			break
		}
		if !w1.Running() {
			t.Fatalf("the cut-off worker exited:\n%s", w1.Output())
		}
		if time.Since(cut) > bound {
			t.Fatalf("the cut-off worker's write did not give up within %v of the cut, while it could not reach Temporal\n%s", bound, w1.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the cut-off write gave up %v after the cut: %s", time.Since(cut).Round(100*time.Millisecond), cause)
	if !strings.Contains(w1.Output(), "hold before create_ticket: released") {
		t.Fatalf("the cut-off worker gave up before its hold ended: want the tool itself to refuse\n%s", w1.Output())
	}
	if !strings.Contains(cause, "deadline") && !strings.Contains(cause, "context") {
		t.Fatalf("the cut-off write gave up with %q, want its context's end (deadline exceeded or cancelled)", cause)
	}
	if n := f.ticketCount(t); n > 1 {
		t.Fatalf("%d tickets while the worker is cut off, want at most 1 (the second worker's)", n)
	}
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	t.Logf("healed the proxy")

	waitStatus(t, srv, run, "Completed", 3*time.Minute)
	if a := answer(t, srv, run); !strings.Contains(a, "TICKET-1") {
		t.Fatalf("answer %q does not name TICKET-1", a)
	}
	ts, err := tools.ReadTickets(f.tickets)
	if err != nil || len(ts) != 1 || ts[0].Title != ticketTitle {
		t.Fatalf("tickets %+v, %v; want exactly 1, %q", ts, err, ticketTitle)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
}
