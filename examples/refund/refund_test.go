package refund_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/examples/refund"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/llm"
)

// devClient starts a dev server of the test's own and returns a client of
// its default namespace. It fails under CI=true when the server cannot
// start and is skipped otherwise.
func devClient(t *testing.T) client.Client {
	t.Helper()
	c, _ := devServer(t)
	return c
}

// devServer is devClient, with the server's address too.
func devServer(t *testing.T) (client.Client, string) {
	t.Helper()
	var out strings.Builder
	cli, err := devserver.CLI()
	var dev *testsuite.DevServer
	if err == nil {
		dev, err = devserver.Start(t.Context(), cli, &out)
	}
	if err != nil {
		testkit.Unavailable(t, "Temporal dev server", fmt.Errorf("%w\n%s", err, out.String()))
	}
	t.Cleanup(func() { _ = dev.Stop() })
	c, err := client.Dial(client.Options{HostPort: dev.FrontendHostPort(), Namespace: "default",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, dev.FrontendHostPort()
}

// countingModel counts the model calls.
type countingModel struct {
	agentrun.Model
	calls atomic.Int32
}

func (m *countingModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.calls.Add(1)
	return m.Model.Complete(ctx, req)
}

// flow is one run of the example's flow on its own task queue: a worker,
// SupportWorkflow started, the refund awaiting approval.
type flow struct {
	payments *refund.Payments
	mailer   *refund.Mailer
	model    *countingModel
	support  client.WorkflowRun
	run      *agentrun.Run
	call     agentrun.PendingCall
}

func start(ctx context.Context, t *testing.T, c client.Client, id string) *flow {
	t.Helper()
	f := begin(ctx, t, c, id, refund.Script(), "Order A-1001 arrived broken; please refund it.")
	var seen []agent.Status
	var err error
	f.call, err = refund.AwaitApproval(ctx, f.run, func(st agentrun.State) { seen = append(seen, st.Status) })
	if err != nil {
		t.Fatalf("%v (statuses seen: %v)", err, seen)
	}
	if f.call.Marker != "tool/2/0/refund" || f.call.Tool != "refund" || f.call.Digest == "" {
		t.Fatalf("awaiting approval: %s %s digest %q; want tool/2/0/refund with its digest", f.call.Marker, f.call.Tool, f.call.Digest)
	}
	var args refund.RefundInput
	if err := f.call.Args(&args); err != nil {
		t.Fatal(err)
	}
	if want := (refund.RefundInput{OrderID: "A-1001", AmountCents: 4999, Reason: "arrived broken"}); args != want {
		t.Fatalf("the refund's arguments: %+v; want %+v", args, want)
	}
	if n := f.payments.Refunds(); n != 0 {
		t.Fatalf("%d refunds before the approval; want 0", n)
	}
	return f
}

// begin starts a worker of the example on its own queue, with a model
// playing script, and SupportWorkflow on request.
func begin(ctx context.Context, t *testing.T, c client.Client, id string, script llm.Script, request string) *flow {
	t.Helper()
	f := &flow{payments: refund.NewPayments(refund.SampleOrders()...), mailer: &refund.Mailer{}, model: &countingModel{Model: llm.NewScripted(script)}}
	queue := "queue-" + id
	w, err := refund.Worker(c, queue, refund.Options{Payments: f.payments, Mailer: f.mailer, Journal: t.TempDir(), Model: f.model,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	f.support, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, refund.SupportWorkflow, request)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := refund.AgentRunID(id), id+"-refunds"; got != want {
		t.Fatalf("AgentRunID(%q) = %q; want %q, RunAgent's default", id, got, want)
	}
	f.run = runs.Run(refund.AgentRunID(id))
	return f
}

// TestSupportWorkflow runs the example's flow on a dev server: the team's
// workflow starts the refunds agent as a child run, which looks the order
// up and waits for approval of the refund. Approved, exactly one refund is
// made and the answer names it; denied, none is and the answer says so;
// cancelled, none is and SupportWorkflow fails naming the run and why.
func TestSupportWorkflow(t *testing.T) {
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests, which run after this function returns
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}

	t.Run("approved", func(t *testing.T) {
		t.Parallel()
		f := start(ctx, t, c, "support-approved")
		ans, err := f.run.Approve(ctx, f.call.Marker, f.call.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Digest != f.call.Digest || ans.Signalled {
			t.Errorf("approval answered %+v; want it pinned to digest %s, as an update", ans, f.call.Digest)
		}
		var answer string
		if err := f.support.Get(ctx, &answer); err != nil {
			t.Fatal(err)
		}
		if n := f.payments.Refunds(); n != 1 {
			t.Errorf("%d refunds; want 1", n)
		}
		if want := "Order A-1001 is refunded (RF-0001); the receipt was emailed as EM-0001."; answer != want {
			t.Errorf("answer %q; want %q", answer, want)
		}
		if n := f.payments.Lookups(); n != 1 {
			t.Errorf("%d order lookups; want 1", n)
		}
		if n := f.mailer.Sent(); n != 1 {
			t.Errorf("%d emails; want 1, by the team's activity", n)
		}
		if n := f.model.calls.Load(); n != 4 {
			t.Errorf("%d model calls; want 4", n)
		}
	})

	t.Run("small", func(t *testing.T) {
		t.Parallel()
		// The approval rule lets a refund of $12.50 through: nobody
		// approves it here, and a write the rule did not let through
		// would wait for a person until the test's deadline.
		f := begin(ctx, t, c, "support-small", refund.ScriptFor("A-1002", 1250), "Order A-1002 arrived broken; please refund it.")
		var answer string
		if err := f.support.Get(ctx, &answer); err != nil {
			t.Fatal(err)
		}
		if want := "Order A-1002 is refunded (RF-0001); the receipt was emailed as EM-0001."; answer != want {
			t.Errorf("answer %q; want %q", answer, want)
		}
		if r, e, m := f.payments.Refunds(), f.mailer.Sent(), f.model.calls.Load(); r != 1 || e != 1 || m != 4 {
			t.Errorf("%d refunds, %d emails, %d model calls; want 1, 1 and 4", r, e, m)
		}
	})

	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		f := start(ctx, t, c, "support-denied")
		const reason = "the customer already got a replacement"
		if _, err := f.run.Deny(ctx, f.call.Marker, f.call.Digest, reason); err != nil {
			t.Fatal(err)
		}
		var answer string
		if err := f.support.Get(ctx, &answer); err != nil {
			t.Fatal(err)
		}
		if n := f.payments.Refunds(); n != 0 {
			t.Errorf("%d refunds; want 0", n)
		}
		if !strings.HasPrefix(answer, "Nothing was refunded: ") || !strings.Contains(answer, reason) {
			t.Errorf("answer %q; want one saying nothing was refunded, with the reason", answer)
		}
		if n := f.mailer.Sent(); n != 0 {
			t.Errorf("%d emails; want 0", n)
		}
		if n := f.payments.Lookups(); n != 1 {
			t.Errorf("%d order lookups; want 1", n)
		}
		if n := f.model.calls.Load(); n != 3 {
			t.Errorf("%d model calls; want 3", n)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		f := start(ctx, t, c, "support-cancelled")
		if err := f.run.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		var answer string
		err := f.support.Get(ctx, &answer)
		const want = "agent run support-cancelled-refunds ended Cancelled: cancelled by an operator"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SupportWorkflow: %q, %v; want its error %q", answer, err, want)
		}
		if n := f.payments.Refunds(); n != 0 {
			t.Errorf("%d refunds; want 0", n)
		}
		if n := f.model.calls.Load(); n != 2 {
			t.Errorf("%d model calls; want 2", n)
		}
	})
}
