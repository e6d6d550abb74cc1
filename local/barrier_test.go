package local_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// TestTerminalBarrier: once a run is Completed or Failed, every operator
// input is refused with a one-line error naming the status, and nothing is
// appended.
func TestTerminalBarrier(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "done")
	f.signal(t, "done", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if o := f.run(t, "done"); o.Status != agent.StatusCompleted {
		t.Fatalf("run: %+v, want Completed", o)
	}
	// A run whose recorded model reply is damaged ends as Failed.
	if err := f.j.Store.Append("failed", 0,
		journal.Record{Type: journal.RunStarted, Input: agent.UserMessages(prompt)},
		journal.Record{Type: journal.StepCompleted, Step: "llm/1", Kind: agent.KindModel, Result: []byte(`"not a reply"`)}); err != nil {
		t.Fatal(err)
	}
	if o := f.run(t, "failed"); o.Status != agent.StatusFailed {
		t.Fatalf("damaged run: %+v, want Failed", o)
	}
	inputs := []operator.Signal{
		{Name: operator.SignalApprove, Marker: ticketStep},
		{Name: operator.SignalDeny, Marker: ticketStep, Reason: "no"},
		{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeRetry},
		{Name: operator.SignalBudget, MaxTurns: 100},
	}
	for id, status := range map[string]string{"done": "Completed", "failed": "Failed"} {
		n := len(f.records(t, id))
		for _, sig := range inputs {
			err := f.j.Signal(t.Context(), id, sig)
			want := sig.Name + ": the run is already " + status + "; nothing changes a run after it ended"
			if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s on the %s run: %v, want one line containing %q", sig.Name, status, err, want)
			}
		}
		if got := len(f.records(t, id)); got != n {
			t.Errorf("the %s run: %d records appended by refused inputs", status, got-n)
		}
	}
}
