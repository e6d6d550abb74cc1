package operator_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// TestExpiry: the deadlines of the undecided pending calls with a timeout
// and a known start, which of them passed, and the first.
func TestExpiry(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	o := &agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{
		{Marker: "tool/1/0/a", Expires: 30 * time.Minute},
		{Marker: "tool/1/1/b", Expires: time.Hour},
		{Marker: "tool/1/2/never"},
		{Marker: "tool/1/3/decided", Expires: time.Minute},
		{Marker: "tool/1/4/unknown", Expires: time.Minute},
	}}
	f := agent.NewFacts()
	f.Decisions["tool/1/3/decided"] = agent.Approval{Approved: true}
	e := operator.Expiry{Outcome: o, Facts: f, Asked: func(m string) time.Time {
		if m == "tool/1/4/unknown" {
			return time.Time{} // an older journal kept no time
		}
		return t0
	}}
	if got := e.Next(); !got.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("next %s, want t0+30m", got)
	}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{29 * time.Minute, ""}, {30 * time.Minute, "tool/1/0/a"}, {2 * time.Hour, "tool/1/0/a tool/1/1/b"}} {
		var got []string
		for _, p := range e.Expired(t0.Add(c.at)) {
			got = append(got, p.Marker)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("expired at t0+%s: %v, want %q", c.at, got, c.want)
		}
	}
	waiting := e
	waiting.Outcome = &agent.Outcome{Status: agent.StatusIndeterminate, Pending: o.Pending}
	if got := waiting.Expired(t0.Add(24 * time.Hour)); len(got) != 0 || !waiting.Next().IsZero() {
		t.Errorf("a run not awaiting approval: expired %v, next %s; want none", got, waiting.Next())
	}
}

// TestExpiredDeny: the engine's denial is typed, keeps the words the model
// and operators read, and is refused from an operator; a later decision
// on the call is refused naming the expiry.
func TestExpiredDeny(t *testing.T) {
	t.Parallel()
	sig := operator.ExpiredDeny(agent.Pending{Marker: marker, Expires: time.Minute})
	if !sig.Expired || sig.Name != operator.SignalDeny || sig.Reason != "approval expired after 1m0s" {
		t.Fatalf("denial %+v, want a typed deny saying approval expired after 1m0s", sig)
	}
	if err := operator.CheckShape(sig); !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "Expired is the engine's") {
		t.Fatalf("an operator's deny carrying Expired: %v, want refused", err)
	}
	r := operator.Target{Facts: agent.NewFacts()}
	r.Apply(sig)
	if a := r.Facts.Decisions[marker]; !a.Expired || a.Approved {
		t.Fatalf("decision %+v, want denied as expired", a)
	}
	err := operator.CheckLoop(operator.Signal{Name: operator.SignalApprove, Marker: marker}, nil, r.Facts)
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "was denied: approval expired after 1m0s") {
		t.Fatalf("approve after the expiry: %v, want refused naming it", err)
	}
	// A person's deny with the same words is not an expiry.
	r.Apply(operator.Signal{Name: operator.SignalDeny, Marker: "tool/2/1/x", Reason: "approval expired after 1m0s"})
	if r.Facts.Decisions["tool/2/1/x"].Expired {
		t.Fatal("a live deny with the words was read as an expiry")
	}
}

// TestReadOld: records written before the typed flag are read as expiries
// by their reason, and only denies whose reason is an expiry's.
func TestReadOld(t *testing.T) {
	t.Parallel()
	old := operator.Signal{Name: operator.SignalDeny, Marker: marker, Reason: "approval expired after 30m0s"}
	if !operator.ReadOldDeny(old).Expired {
		t.Fatal("an old expiry record was not read as one")
	}
	if operator.ReadOldDeny(operator.Signal{Name: operator.SignalDeny, Marker: marker, Reason: "no"}).Expired {
		t.Fatal("a person's old deny was read as an expiry")
	}
	f := agent.NewFacts()
	f.Decisions[marker] = agent.Approval{Reason: "approval expired after 30m0s"}
	f.Decisions["tool/2/1/x"] = agent.Approval{Reason: "no"}
	operator.ReadOldDecisions(f)
	if !f.Decisions[marker].Expired || f.Decisions["tool/2/1/x"].Expired {
		t.Fatalf("decisions %+v, want only the expiry's read as one", f.Decisions)
	}
}
