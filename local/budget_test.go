package local_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// TestBudgetReachedThenRaised: a run stops as BudgetExceeded at its limit
// on model calls, then at its limit on tokens, and goes on each time its
// budget is raised; a budget not above what is used is refused and writes
// nothing.
func TestBudgetReachedThenRaised(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.j.Limits = agent.Budget{MaxTurns: 1}
	const id = "budget"
	o := f.run(t, id)
	if o.Status != agent.StatusBudgetExceeded || o.Reason != "the run made 1 model calls; its limit is 1" {
		t.Fatalf("first run: %+v, want BudgetExceeded at 1 model call", o)
	}
	if n := f.exec.count("llm/"); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
	if recs := f.records(t, id); recs[0].Budget == nil || *recs[0].Budget != (agent.Budget{MaxTurns: 1}) {
		t.Fatalf("run.started budget %+v, want MaxTurns 1", recs[0].Budget)
	}
	info, err := f.j.Show(id)
	if err != nil || info.Status != agent.StatusBudgetExceeded || info.Turns != 1 || info.Budget.MaxTurns != 1 || info.Usage.Total() == 0 {
		t.Fatalf("show: %+v, %v", info, err)
	}
	if w, err := f.j.Waiting(); err != nil || len(w) != 1 || w[0].RunID != id {
		t.Fatalf("waiting: %+v, %v; want the budget run", w, err)
	}

	n := len(f.records(t, id))
	for _, bad := range []operator.Signal{
		{Name: operator.SignalBudget, MaxTurns: 1},
		{Name: operator.SignalBudget, MaxTurns: -5},
		{Name: operator.SignalBudget, MaxTokens: info.Usage.Total()},
		{Name: operator.SignalBudget},
	} {
		err := f.j.Signal(t.Context(), id, bad)
		if !errors.Is(err, operator.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("budget %+v: %v, want a one-line operator.ErrInvalid", bad, err)
		}
	}
	if got := len(f.records(t, id)); got != n {
		t.Fatalf("refused budgets wrote %d records", got-n)
	}

	f.signal(t, id, operator.Signal{Name: operator.SignalBudget, MaxTurns: 2})
	if o = f.run(t, id); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("after raising to 2: %+v, want AwaitingApproval", o)
	}
	if n := f.exec.count("llm/"); n != 2 {
		t.Fatalf("model calls: %d, want 2", n)
	}
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if o = f.run(t, id); o.Status != agent.StatusBudgetExceeded || !strings.Contains(o.Reason, "limit is 2") {
		t.Fatalf("after approval: %+v, want BudgetExceeded at 2", o)
	}
	// The token limit: exactly what is used stops the run.
	info, _ = f.j.Show(id)
	used := info.Usage.Total()
	f.signal(t, id, operator.Signal{Name: operator.SignalBudget, MaxTurns: 10, MaxTokens: used + 1})
	f.j.Limits = agent.Budget{MaxTurns: 99} // a resumed run keeps its recorded budget
	o = f.run(t, id)
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
		t.Fatalf("after raising: %+v, want Completed with TICKET-1", o)
	}
	if n, k := f.exec.count("llm/"), f.ticketCount(t); n != 3 || k != 1 {
		t.Fatalf("model calls %d, tickets %d; want 3, 1", n, k)
	}
	info, _ = f.j.Show(id)
	if info.Budget != (agent.Budget{MaxTurns: 10, MaxTokens: used + 1}) || info.Turns != 3 {
		t.Fatalf("final budget %+v after %d calls, want MaxTurns 10, MaxTokens %d, 3 calls", info.Budget, info.Turns, used+1)
	}
}

// TestBudgetTokens: a run stops when its tokens reach MaxTokens.
func TestBudgetTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.j.Limits = agent.Budget{MaxTokens: 1}
	o := f.run(t, "tokens")
	if o.Status != agent.StatusBudgetExceeded || !strings.Contains(o.Reason, "tokens; its limit is 1") || f.exec.count("llm/") != 1 {
		t.Fatalf("got %+v after %d model calls, want BudgetExceeded on tokens after 1", o, f.exec.count("llm/"))
	}
}
