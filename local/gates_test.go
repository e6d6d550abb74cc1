package local_test

import (
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// readNoApproval is the loop's tools with create_ticket turned into a read
// that needs no approval, as an edited tools file would give them.
func readNoApproval(tools []agent.ToolSpec) []agent.ToolSpec {
	out := make([]agent.ToolSpec, len(tools))
	for i, s := range tools {
		if s.Name == "create_ticket" {
			s.Kind, s.Approval = agent.KindRead, agent.ApprovalNever
		}
		out[i] = s
	}
	return out
}

// TestGateRecordedWhenAsked: the model step's step.completed records how
// each call it asks for is gated; a run resumed after the tools changed
// keeps to it (still waiting, no ticket) until approved. A journal without
// the record (written before it existed) decides from the current tools.
func TestGateRecordedWhenAsked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if o := f.run(t, "gated"); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("first run: %+v, want AwaitingApproval", o)
	}
	var gates map[string]agent.Gate
	for _, r := range f.records(t, "gated") {
		if r.Type == journal.StepCompleted && r.Step == "llm/2" {
			gates = r.Gates
		}
	}
	if g, ok := gates[ticketStep]; !ok || g.Verdict != agent.RequireApproval || g.Kind != agent.KindWrite {
		t.Fatalf("llm/2 records gates %+v, want %s gated for approval as a write", gates, ticketStep)
	}
	f.j.Loop.Tools = readNoApproval(f.j.Loop.Tools)
	o := f.run(t, "gated")
	if o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 || o.Pending[0].Marker != ticketStep || f.ticketCount(t) != 0 {
		t.Fatalf("resumed with create_ticket a read without approval: %+v, %d tickets; want still AwaitingApproval and 0", o, f.ticketCount(t))
	}
	f.signal(t, "gated", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if o := f.run(t, "gated"); o.Status != agent.StatusCompleted || f.ticketCount(t) != 1 {
		t.Fatalf("after the approval: %+v, %d tickets; want Completed and 1", o, f.ticketCount(t))
	}
	// A step.completed it recorded says write: the guard ran it as one.
	for _, r := range f.records(t, "gated") {
		if r.Step == ticketStep && r.Kind != agent.KindWrite {
			t.Fatalf("%s recorded as %s, want write", ticketStep, r.Kind)
		}
	}

	// An older journal, without gates: the current tools decide.
	old := newFixture(t)
	if o := old.run(t, "old"); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("first run: %+v, want AwaitingApproval", o)
	}
	recs := old.records(t, "old")
	for i := range recs {
		recs[i].Gates = nil
	}
	store := journal.NewMemStore()
	if err := store.Append("old", 0, recs...); err != nil {
		t.Fatal(err)
	}
	old.j.Store = store
	old.j.Loop.Tools = readNoApproval(old.j.Loop.Tools)
	if o := old.run(t, "old"); o.Status != agent.StatusCompleted || old.ticketCount(t) != 1 {
		t.Fatalf("an old journal resumed with create_ticket a read: %+v, %d tickets; want Completed and 1 (decided from the current tools)", o, old.ticketCount(t))
	}
}
