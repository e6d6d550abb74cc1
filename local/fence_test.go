package local_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// fenceClock is a settable clock for the fence tests.
type fenceClock struct{ now time.Time }

func (c *fenceClock) Now() time.Time { return c.now }

// TestLocalRetryRefusedWhileHeld: on the local engine too, a person's
// retry of an Indeterminate write is refused, in one line naming the
// deadline, while the attempt that started it may still run (a driver
// that lost its PostgreSQL lock, say), and accepted after.
func TestLocalRetryRefusedWhileHeld(t *testing.T) {
	f := newFixture(t)
	clock := &fenceClock{now: time.Now().UTC()}
	f.j.Now = clock.Now
	const id = "held"
	f.run(t, id)
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	recs := f.records(t, id)
	holder := fence.Attempt{Generation: 1, Number: 1, Worker: "driver-a", Deadline: clock.now.Add(10 * time.Second)}.Here()
	if err := f.j.Store.Append(id, len(recs), journal.Record{Type: journal.StepStarted, Step: ticketStep, Kind: agent.KindWrite, Attempt: &holder}); err != nil {
		t.Fatal(err)
	}
	info, err := f.j.Show(id)
	if err != nil || info.Status != agent.StatusIndeterminate || !strings.Contains(info.Reason, "attempt 1 (worker driver-a) may still be running until") {
		t.Fatalf("show: %+v, %v; want Indeterminate naming the attempt that may still run", info, err)
	}
	retry := operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeRetry}
	err = f.j.Signal(t.Context(), id, retry)
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "attempt 1 (worker driver-a) of "+ticketStep+" may still be running until") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("retry while held: %v, want a one-line refusal naming the deadline", err)
	}
	if n := len(f.records(t, id)); n != len(recs)+1 {
		t.Fatalf("records after the refusal: %d, want %d (nothing written)", n, len(recs)+1)
	}
	clock.now = holder.Until()
	if err := f.j.Signal(t.Context(), id, retry); err != nil {
		t.Fatalf("retry after the deadline and the grace: %v", err)
	}
}
