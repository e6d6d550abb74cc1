package local_test

import (
	"errors"
	"math"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
)

// price is the test's: $1,000 per million input tokens and $2,000 per
// million output tokens, so that the scripted model's few tokens cost cents.
var price = agent.Price{Input: 1000, Output: 2000}

// invoice is what u's tokens cost at price, computed by hand.
func invoice(u agent.Usage) float64 {
	return (float64(u.InputTokens)*1000 + float64(u.OutputTokens)*2000) / 1e6
}

// TestBudgetCost: a run with MaxCost $0.01 stops BudgetExceeded after its
// first model call, whose cost (the invoice of its tokens) reached the
// limit, with no ticket; a budget not above that cost is refused; raised
// to a tenth of a cent above it, the run makes its second call (under the
// limit when it began), files its ticket once approved and stops again
// before a third call, at a cost over the limit that is the invoice of its
// two calls' tokens.
func TestBudgetCost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.exec.inner.(*execute.Executor).Model = llm.Priced(llm.NewScripted(llm.HandExample()), price)
	f.j.Limits = agent.Budget{MaxCost: 0.01}
	const id = "cost"
	o := f.run(t, id)
	info, err := f.j.Show(id)
	if err != nil {
		t.Fatal(err)
	}
	first := info.Usage.Cost
	if o.Status != agent.StatusBudgetExceeded || o.Reason != "the run cost "+agent.FormatCost(first)+"; its limit is $0.0100" {
		t.Fatalf("first drive: %s (%s); want BudgetExceeded at the cost limit of $0.0100", o.Status, o.Reason)
	}
	if n, k := f.exec.count("llm/"), f.ticketCount(t); n != 1 || k != 0 || info.Turns != 1 {
		t.Fatalf("first drive: %d model calls (show: %d), %d tickets; want 1, 0", n, info.Turns, k)
	}
	if first < 0.01 || math.Abs(first-invoice(info.Usage)) > 1e-12 || info.Budget.MaxCost != 0.01 {
		t.Fatalf("cost %v of %+v under budget %+v; want the invoice %v, at least the limit $0.01", first, info.Usage, info.Budget, invoice(info.Usage))
	}
	if err := f.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalBudget, MaxCost: first}); !errors.Is(err, operator.ErrInvalid) {
		t.Fatalf("MaxCost equal to the cost: %v; want operator.ErrInvalid", err)
	}
	limit := first + 0.001
	f.signal(t, id, operator.Signal{Name: operator.SignalBudget, MaxCost: limit})
	if o = f.run(t, id); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("after raising MaxCost to %v: %s (%s); want AwaitingApproval", limit, o.Status, o.Reason)
	}
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	o = f.run(t, id)
	info, _ = f.j.Show(id)
	if o.Status != agent.StatusBudgetExceeded || o.Reason != "the run cost "+agent.FormatCost(info.Usage.Cost)+"; its limit is "+agent.FormatCost(limit) {
		t.Fatalf("after approval: %s (%s); want BudgetExceeded at %s", o.Status, o.Reason, agent.FormatCost(limit))
	}
	if n, k := f.exec.count("llm/"), f.ticketCount(t); n != 2 || k != 1 || info.Turns != 2 {
		t.Fatalf("after approval: %d model calls (show: %d), %d tickets; want 2, 1", n, info.Turns, k)
	}
	if c := info.Usage.Cost; c < limit || math.Abs(c-invoice(info.Usage)) > 1e-12 {
		t.Fatalf("cost %v of %+v; want the invoice %v, at least the limit %v", c, info.Usage, invoice(info.Usage), limit)
	}
}
