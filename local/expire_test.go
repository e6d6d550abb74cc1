package local_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// expiring gives the fixture's create_ticket a 30-minute approval timeout
// and a clock the test moves.
func expiring(t *testing.T) (*fixture, *time.Time) {
	t.Helper()
	f := newFixture(t)
	demo := tools.Demo(tools.DemoConfig{Tickets: f.tickets})
	demo[1] = tools.Apply(demo[1], tools.Override{ApprovalTimeout: 30 * time.Minute})
	set, err := tools.NewSet(demo...)
	if err != nil {
		t.Fatal(err)
	}
	f.j.Loop = agent.Loop{Tools: set.Specs()}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f.j.Now = func() time.Time { return now }
	return f, &now
}

// TestLocalApprovalExpires: on the local engine an approval timeout runs
// from the model step that asked for the call; a run resumed after it
// denies the call as expired, tells the model, and completes with no
// ticket; an approve after it is refused naming the expiry.
func TestLocalApprovalExpires(t *testing.T) {
	t.Parallel()
	f, now := expiring(t)
	if o := f.run(t, "x-1"); o.Status != agent.StatusAwaitingApproval || o.Pending[0].Expires != 30*time.Minute {
		t.Fatalf("first run: %+v, want AwaitingApproval expiring after 30m", o)
	}
	*now = now.Add(29 * time.Minute)
	if o := f.run(t, "x-1"); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("at 29m: %s, want still AwaitingApproval", o.Status)
	}
	*now = now.Add(time.Minute)
	err := f.j.Signal(t.Context(), "x-1", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "was denied: approval expired after 30m0s") {
		t.Fatalf("approve at 30m: %v, want refused: denied, approval expired after 30m0s", err)
	}
	o := f.run(t, "x-1")
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "approval expired after 30m0s") {
		t.Fatalf("resumed: %+v, want Completed telling of the expiry", o)
	}
	if n := f.exec.count("llm/"); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}

// TestLocalApprovalInTime: an approval inside the timeout runs the call.
func TestLocalApprovalInTime(t *testing.T) {
	t.Parallel()
	f, now := expiring(t)
	f.run(t, "x-2")
	*now = now.Add(29 * time.Minute)
	f.signal(t, "x-2", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	*now = now.Add(time.Hour)
	if o := f.run(t, "x-2"); o.Status != agent.StatusCompleted || f.ticketCount(t) != 1 {
		t.Fatalf("resumed: %s with %d tickets, want Completed with 1", o.Status, f.ticketCount(t))
	}
}

// TestLocalOldExpiryRecord: a journal written before the expired deny was
// typed recorded it by its reason alone; it is still read as an expiry.
func TestLocalOldExpiryRecord(t *testing.T) {
	t.Parallel()
	f, _ := expiring(t)
	f.run(t, "x-3")
	old := operator.Signal{Name: operator.SignalDeny, Marker: ticketStep, Reason: "approval expired after 30m0s"}
	if err := f.j.Store.Append("x-3", len(f.records(t, "x-3")), journal.Record{Type: journal.SignalRecord, Signal: &old}); err != nil {
		t.Fatal(err)
	}
	err := f.j.Signal(t.Context(), "x-3", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "was denied: approval expired after 30m0s") {
		t.Fatalf("approve after an old expiry record: %v, want refused naming the expiry", err)
	}
}
