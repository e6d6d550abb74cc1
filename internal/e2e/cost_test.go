package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// The fixture's price: $1,000 per million input tokens and $2,000 per
// million output tokens, so that the scripted model's few tokens cost
// cents.
const (
	priceIn, priceOut = 1000.0, 2000.0
	pricedModels      = `{"scripted": {"price": {"input": 1000, "output": 2000}}}`
)

// invoice is what u's tokens cost at the fixture's price, computed by hand.
func invoice(u agent.Usage) float64 {
	return (float64(u.InputTokens)*priceIn + float64(u.OutputTokens)*priceOut) / 1e6
}

func writePricedModels(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(p, []byte(pricedModels), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCostBudgetOnDevServer: with a price in the models file, a run
// started with --max-cost 0.01 parks BudgetExceeded after its first model
// call (cost $0.0180 at the price), before the step that would pass it;
// its state, current details and reconcile show carry the cost; a budget
// not above the cost is refused; reconcile budget RUN 0 0 1 raises it and
// the run completes with one ticket. The cost in state equals the
// hand-computed invoice of its tokens and the sum recorded with the steps.
// The history replays.
func TestCostBudgetOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env("AGENTRUN_MODELS=" + writePricedModels(t))
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-cost"

	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--max-cost", "0.01", prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "BudgetExceeded", time.Minute)
	if n := modelCalls(t, srv, run); n != 1 || st.Turns != 1 || st.Budget.MaxCost != 0.01 {
		t.Fatalf("parked after %d model calls: %+v", n, st)
	}
	cost := st.Usage.Cost
	if math.Abs(cost-invoice(st.Usage)) > 1e-12 || cost < 0.01 || st.Reason != "the run cost "+agent.FormatCost(cost)+"; its limit is $0.0100" {
		t.Fatalf("cost %v for %+v, want %v; reason %q", cost, st.Usage, invoice(st.Usage), st.Reason)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, agent.FormatCost(cost)) || !strings.Contains(d, "a cost of $0.0100") || !strings.Contains(d, `"MaxCost":0.02`) {
		t.Fatalf("current details:\n%s", d)
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if !strings.Contains(out, "cost "+agent.FormatCost(cost)+", limit $0.0100") {
		t.Fatalf("reconcile show: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", run, "0", "0", "0.001"); code != 1 || !strings.Contains(out, "MaxCost $0.0010 is not above the "+agent.FormatCost(cost)+" the run cost") {
		t.Fatalf("reconcile budget below the cost: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", run, "0", "0", "1"); code != 0 {
		t.Fatalf("reconcile budget 0 0 1: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--wait"); code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	st, err := state(t, srv, run)
	if err != nil {
		t.Fatal(err)
	}
	steps := ownUsage(t, srv, run)
	if math.Abs(st.Usage.Cost-invoice(st.Usage)) > 1e-12 || math.Abs(st.Usage.Cost-steps.Cost) > 1e-12 || modelCalls(t, srv, run) != 3 || f.ticketCount(t) != 1 {
		t.Fatalf("completed: cost %v, invoice %v, steps' %v; %d model calls, %d tickets", st.Usage.Cost, invoice(st.Usage), steps.Cost, modelCalls(t, srv, run), f.ticketCount(t))
	}
	replayHistory(t, f, run)
}

// TestCostBudgetLocal: the local engine honours the same price and cost
// budget: --max-cost 0.01 stops after one model call (exit 7), show prints
// the cost, reconcile budget raises it, and the run goes on to the
// approval.
func TestCostBudgetLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODEL=scripted", "AGENTRUN_MODELS="+writePricedModels(t))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "c1", "--max-cost", "0.01", prompt); code != 7 || !strings.Contains(out, "BudgetExceeded") {
		t.Fatalf("starter --local --max-cost: exit %d, want 7\n%s", code, out)
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "c1")
	if !strings.Contains(out, "1 of 25 model calls") || !strings.Contains(out, ", limit $0.0100") || !strings.Contains(out, "cost $0.0") {
		t.Fatalf("reconcile --local show: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "budget", "c1", "0", "0", "1"); code != 0 {
		t.Fatalf("reconcile --local budget: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "c1"); code != 3 || !strings.Contains(out, ticketStep) {
		t.Fatalf("resume: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
}
