package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

// blocking runs the step named at through inner only after it was told
// the step started, and blocks that step until its context is done, as a
// slow tool that honours cancellation does; it reports the context's
// error on seen.
type blocking struct {
	inner   agent.Executor
	at      string
	started chan struct{}
	seen    chan error
	effect  bool // run the step before blocking (a write whose effect happened)
}

func (b *blocking) Execute(ctx context.Context, s agent.Step) (json.RawMessage, error) {
	if s.Name != b.at {
		return b.inner.Execute(ctx, s)
	}
	if b.effect {
		if _, err := b.inner.Execute(ctx, s); err != nil {
			return nil, err
		}
	}
	close(b.started)
	<-ctx.Done()
	b.seen <- ctx.Err()
	return nil, ctx.Err()
}

// cancelDuring drives the hand example (approving the ticket) with step at
// blocked, cancels the run while it blocks, and returns the outcome.
func cancelDuring(t *testing.T, f *fixture, id, at string, effect bool) agent.Outcome {
	t.Helper()
	b := &blocking{inner: f.exec, at: at, started: make(chan struct{}), seen: make(chan error, 1), effect: effect}
	if at == ticketStep {
		if o := f.run(t, id); o.Status != agent.StatusAwaitingApproval {
			t.Fatalf("first run: %s, want AwaitingApproval", o.Status)
		}
		f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	}
	type result struct {
		o   agent.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := f.j.Drive(t.Context(), id, agent.UserMessages(prompt), b)
		done <- result{o, err}
	}()
	<-b.started
	if err := f.j.Cancel(t.Context(), id); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	select {
	case err := <-b.seen:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the step saw %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running step was not cancelled within 5s")
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	return r.o
}

// TestCancelDuringRead: cancelled while lookup runs, the read sees its
// context cancelled, no further step runs, and the run is Cancelled with
// nothing in flight; a later Run says so too and runs nothing.
func TestCancelDuringRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := cancelDuring(t, f, "c-read", hand.LookupStep, false)
	if o.Status != agent.StatusCancelled || o.Reason != agent.CancelledReason("") {
		t.Fatalf("outcome %+v, want Cancelled by an operator", o)
	}
	if n := f.exec.count("llm/"); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
	again := f.run(t, "c-read")
	if again.Status != agent.StatusCancelled || f.exec.count("") != 1 {
		t.Fatalf("resumed: %s after %d calls; want Cancelled, nothing run", again.Status, f.exec.count(""))
	}
}

// TestCancelDuringWrite: cancelled while create_ticket runs after its
// effect, the outcome names the write as possibly taken effect; operator
// input and a second cancel are refused with the status.
func TestCancelDuringWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := cancelDuring(t, f, "c-write", ticketStep, true)
	if o.Status != agent.StatusCancelled || !strings.Contains(o.Reason, "the write "+ticketStep+" was running: it may have taken effect") {
		t.Fatalf("outcome %+v, want Cancelled naming %s", o, ticketStep)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	info, err := f.j.Show("c-write")
	if err != nil || info.Status != agent.StatusCancelled || info.Reason != o.Reason {
		t.Fatalf("show: %+v, %v; want Cancelled with the reason", info, err)
	}
	n := len(f.records(t, "c-write"))
	err = f.j.Signal(t.Context(), "c-write", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeRetry})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "already Cancelled") {
		t.Fatalf("reconcile after cancel: %v, want refused: already Cancelled", err)
	}
	if err := f.j.Cancel(t.Context(), "c-write"); err == nil || !strings.Contains(err.Error(), "already Cancelled") {
		t.Fatalf("second cancel: %v, want refused: already Cancelled", err)
	}
	if got := len(f.records(t, "c-write")); got != n {
		t.Fatalf("records: %d after refused input, want %d", got, n)
	}
}
