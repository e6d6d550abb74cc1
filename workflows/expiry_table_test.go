package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestExpiryTable runs the approval-expiry table (testenv.ExpiryCases) on
// the workflow, on the test environment's clock; local/expiry_table_test.go
// runs the same table on the local engine.
func TestExpiryTable(t *testing.T) {
	t.Parallel()
	for _, c := range testenv.ExpiryCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			h := newScriptHarness(t, testenv.ExpiryScript())
			h.withApprovalTimeout(t, c.Timeout)
			if c.ReadTakes > 0 {
				h.env.OnActivity(activities.NameCallTool, mock.Anything, mock.Anything).After(c.ReadTakes).Return(h.acts.CallTool)
			}
			if c.Look > 0 {
				h.at(c.Look, func() {
					if s := h.state(t); s.Status != agent.StatusAwaitingApproval || len(s.Expired) != 0 {
						t.Errorf("at %s: status %s, expired %v; want AwaitingApproval, none expired", c.Look, s.Status, s.Expired)
					}
				})
			}
			if c.Decide != "" {
				h.at(c.At, func() { h.env.SignalWorkflow(c.Decide, c.Payload()) })
			}
			start := h.env.Now()
			h.run()
			r := h.result(t)
			s := h.state(t)
			if c.Expired {
				if len(s.Expired) != 1 || s.Expired[0].Marker != testenv.ExpiryMarker || s.Expired[0].After != c.Timeout.String() {
					t.Fatalf("expired %+v, want %s after %s", s.Expired, testenv.ExpiryMarker, c.Timeout)
				}
				if ended := h.env.Now().Sub(start); ended < c.EndsAt || ended > c.EndsAt+time.Second {
					t.Errorf("the run ended %s after the model step, want %s: the clock starts at the model step", ended, c.EndsAt)
				}
			} else if len(s.Expired) != 0 {
				t.Fatalf("expired %+v, want none", s.Expired)
			}
			if !strings.Contains(r.Answer, c.AnswerHas) {
				t.Errorf("answer %q, want it to contain %q", r.Answer, c.AnswerHas)
			}
			if n := h.modelCalls(); n != c.ModelCalls {
				t.Errorf("model calls: %d, want %d", n, c.ModelCalls)
			}
			if n := h.ticketCount(t); n != c.Tickets {
				t.Errorf("tickets: %d, want %d", n, c.Tickets)
			}
		})
	}
}

// TestExpiryClockAcrossContinueAsNew: a run that continues as new after
// every step carries its model step's completion time (Continued.Asked)
// to the execution that runs lookup and waits, whose approval clock starts
// there; the call still expires and the model is told.
func TestExpiryClockAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, testenv.ExpiryScript())
	h.withApprovalTimeout(t, 30*time.Minute)
	inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), ContinueAfter: 1}, nil)
	if len(inputs) != 3 {
		t.Fatalf("%d executions, want 3 (the model step; lookup and the wait; the answer)", len(inputs))
	}
	asked := inputs[1].Continued.Asked
	if asked.IsZero() {
		t.Fatal("the execution after the model step got no Asked")
	}
	if since := inputs[2].Continued.Since[testenv.ExpiryMarker]; !since.Equal(asked) {
		t.Errorf("the clock started %s, want at the model step's completion %s", since, asked)
	}
	r := h.result(t)
	if s := h.state(t); len(s.Expired) != 1 || s.Expired[0].Marker != testenv.ExpiryMarker || !strings.Contains(r.Answer, "approval expired after 30m0s") {
		t.Fatalf("expired %+v, answer %q; want %s expired and the model told", s.Expired, r.Answer, testenv.ExpiryMarker)
	}
}
