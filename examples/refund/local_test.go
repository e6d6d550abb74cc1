package refund_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/examples/refund"
	"github.com/agentrun/agentrun/llm"
)

// TestLocal runs the same refunds agent on the local engine, with no
// server, and operates it with the code of the Temporal flow
// (AwaitApproval, Approve or Deny with the digest, Wait): approved,
// exactly one refund is made and the answer names it; denied, none is.
func TestLocal(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			payments, mailer := refund.NewPayments(refund.SampleOrders()...), &refund.Mailer{}
			model := &countingModel{Model: llm.NewScripted(refund.Script())}
			l, err := refund.Local(refund.Options{Payments: payments, Mailer: mailer, Journal: t.TempDir(), Model: model,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			run, err := l.Start(ctx, agentrun.StartOptions{ID: "support-1-refunds", Agent: refund.AgentName, Prompt: "Order A-1001 arrived broken; please refund it."})
			if err != nil {
				t.Fatal(err)
			}
			call, err := refund.AwaitApproval(ctx, run, nil)
			if err != nil {
				t.Fatal(err)
			}
			var args refund.RefundInput
			if err := call.Args(&args); err != nil || args != (refund.RefundInput{OrderID: "A-1001", AmountCents: 4999, Reason: "arrived broken"}) {
				t.Fatalf("the refund's arguments: %+v, %v", args, err)
			}
			if approve {
				_, err = run.Approve(ctx, call.Marker, call.Digest)
			} else {
				_, err = run.Deny(ctx, call.Marker, call.Digest, "the customer already got a replacement")
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := run.Wait(ctx)
			if err != nil || res.Status != agentrun.StatusCompleted {
				t.Fatalf("Wait: %+v, %v; want Completed", res, err)
			}
			want, refunds, emails, calls := "the receipt was emailed as EM-0001", 1, 1, int32(4)
			if !approve {
				want, refunds, emails, calls = "Nothing was refunded: ", 0, 0, 3
			}
			if !strings.Contains(res.Answer, want) {
				t.Errorf("answer %q; want %q in it", res.Answer, want)
			}
			if n := payments.Refunds(); n != refunds {
				t.Errorf("%d refunds; want %d", n, refunds)
			}
			if n := mailer.Sent(); n != emails {
				t.Errorf("%d emails; want %d (the team's activity, called in process)", n, emails)
			}
			if n := model.calls.Load(); n != calls {
				t.Errorf("%d model calls; want %d", n, calls)
			}
		})
	}
}
