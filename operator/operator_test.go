package operator_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

const marker = hand.TicketStep

// TestApply: each input changes the run's facts as the contract says, the
// same for both engines.
func TestApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig   operator.Signal
		check func(r *operator.Target, at string) string // "" when right
	}{
		{operator.Signal{Name: operator.SignalApprove, Marker: marker}, func(r *operator.Target, _ string) string {
			if a, ok := r.Facts.Decisions[marker]; !ok || !a.Approved {
				return "no approval recorded"
			}
			return ""
		}},
		{operator.Signal{Name: operator.SignalDeny, Marker: marker, Reason: "no"}, func(r *operator.Target, _ string) string {
			if a := r.Facts.Decisions[marker]; a.Approved || a.Reason != "no" {
				return "no denial with its reason"
			}
			return ""
		}},
		{operator.Signal{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeDone, Result: "T-7"}, func(r *operator.Target, _ string) string {
			if r.Facts.Indeterminate[marker] || string(r.Facts.Results[marker]) != string(agent.ReconciledResult("T-7")) {
				return "the person's result is not the step's"
			}
			return ""
		}},
		{operator.Signal{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeRetry}, func(r *operator.Target, _ string) string {
			if _, ok := r.Facts.Results[marker]; ok || r.Facts.Indeterminate[marker] {
				return "a retry must clear the mark and record no result"
			}
			return ""
		}},
		{operator.Signal{Name: operator.SignalBudget, MaxTurns: 40}, func(r *operator.Target, _ string) string {
			if r.Budget.MaxTurns != 40 || r.Budget.MaxTokens != 500 {
				return "want MaxTurns raised, MaxTokens kept"
			}
			return ""
		}},
		{operator.Signal{Name: operator.SignalMessage, Content: "hi"}, func(r *operator.Target, at string) string {
			if at != "llm/5" || len(r.Facts.Messages[at]) != 1 || r.Facts.Messages[at][0].Content != "hi" {
				return "want the message for llm/5, after the newest model step started"
			}
			return ""
		}},
	} {
		f := agent.NewFacts()
		f.Indeterminate[marker] = true
		r := &operator.Target{Facts: f, Budget: agent.Budget{MaxTurns: 10, MaxTokens: 500}, Turn: 3, Models: 4}
		at := r.Apply(tc.sig)
		if msg := tc.check(r, at); msg != "" {
			t.Errorf("%s: %s (facts %+v, budget %+v, at %q)", tc.sig.Name, msg, r.Facts, r.Budget, at)
		}
		if tc.sig.Name != operator.SignalMessage && at != "" {
			t.Errorf("%s: message step %q, want none", tc.sig.Name, at)
		}
	}
}

// TestCheck: Check refuses in the contract's order (ended, execution,
// budget, where the loop stands, a retry under a live attempt), and
// accepts what is valid.
func TestCheck(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 14, 3, 0, 0, time.UTC)
	waiting := &agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: marker}}}
	indet := agent.NewFacts()
	indet.Indeterminate[marker] = true
	approve := operator.Signal{Name: operator.SignalApprove, Marker: marker}
	pinned := approve
	pinned.Execution = "run-1"
	retry := operator.Signal{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeRetry}
	holder := &operator.Holder{Step: marker, Attempt: "attempt 1 (worker 1@h)", Until: now.Add(time.Minute)}
	for _, tc := range []struct {
		name string
		sig  operator.Signal
		s    operator.Stand
		want string // "" for valid
	}{
		{"ended", approve, operator.Stand{Status: agent.StatusCompleted, Outcome: waiting, Facts: agent.NewFacts()},
			"approve: the run is already Completed; nothing changes a run after it ended"},
		{"local execution", pinned, operator.Stand{Local: true, Outcome: waiting, Facts: agent.NewFacts()},
			`approve: execution "run-1" names a Temporal run; a local run has none`},
		{"other execution", pinned, operator.Stand{RunID: "r", FirstExecution: "run-0", Outcome: waiting, Facts: agent.NewFacts()},
			"approve: execution run-1 is not this run's, whose first execution is run-0"},
		{"its execution", pinned, operator.Stand{FirstExecution: "run-1", Outcome: waiting, Facts: agent.NewFacts()}, ""},
		{"budget not above", operator.Signal{Name: operator.SignalBudget, MaxTurns: 3}, operator.Stand{Turns: 3, Facts: agent.NewFacts()},
			"budget: MaxTurns 3 is not above the 3 model calls the run made"},
		{"budget above", operator.Signal{Name: operator.SignalBudget, MaxTurns: 4}, operator.Stand{Turns: 3, Facts: agent.NewFacts()}, ""},
		{"not pending", approve, operator.Stand{Facts: agent.NewFacts()}, "approve: marker " + marker + " is not awaiting approval; pending: none"},
		{"retry under a live attempt", retry, operator.Stand{Facts: indet, Holder: holder, Now: now},
			"reconcile: attempt 1 (worker 1@h) of " + marker + " may still be running until 14:04:00 UTC"},
		{"retry after it", retry, operator.Stand{Facts: indet, Holder: holder, Now: now.Add(time.Hour)}, ""},
	} {
		err := operator.Check(tc.sig, tc.s)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want ErrInvalid containing %q", tc.name, err, tc.want)
		}
	}
}

// TestPayloads: every payload the package builds decodes to the input it
// carries, and Decode refuses a field of another operation.
func TestPayloads(t *testing.T) {
	t.Parallel()
	for _, sig := range []operator.Signal{
		{Name: operator.SignalApprove, Marker: marker, Digest: "sha256:0123456789abcdef", Execution: "run-1"},
		{Name: operator.SignalDeny, Marker: marker, Reason: "no", Execution: "run-1"},
		{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeDone, Result: "T-7"},
		{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeRetry},
		{Name: operator.SignalBudget, MaxTurns: 40, MaxTokens: 200000},
		{Name: operator.SignalMessage, Content: "also check staging"},
	} {
		b, err := json.Marshal(operator.PayloadOf(sig, sig.Execution))
		if err != nil {
			t.Fatal(err)
		}
		got, err := operator.Decode(sig.Name, b)
		if err != nil || got != sig {
			t.Errorf("%s %s: decoded %+v, %v; want %+v", sig.Name, b, got, err, sig)
		}
	}
	if _, err := operator.Decode(operator.SignalApprove, []byte(`{"Marker":"`+marker+`","Content":"x"}`)); err == nil || !strings.Contains(err.Error(), `unknown field "Content"`) {
		t.Errorf("approve with a message's field: %v, want it refused as unknown", err)
	}
	if _, err := operator.Decode("aprove", []byte(`{}`)); err == nil || err.Error() != `unknown operation "aprove"; want approve, deny, reconcile, budget, message` {
		t.Errorf("unknown operation: %v", err)
	}
}
