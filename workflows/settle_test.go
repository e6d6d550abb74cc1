package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// TestSettledByProbe: the first attempt of create_ticket files the ticket
// and dies before it reports (its guard start is recorded); the second
// attempt asks the probe, finds the ticket by the key, and completes the
// step with it. Both attempts carry the same key; the run completes with 1
// ticket and 3 model calls and says how the write was settled in its state
// and details.
func TestSettledByProbe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	set, err := tools.Open(t.Context(), tools.Config{Tools: map[string]tools.Override{"create_ticket": {
		IdempotencyKey: ptr("request_id"),
		Probe:          &agent.Probe{Tool: "find_ticket", Args: json.RawMessage(`{"request_id": "{{key}}"}`), Found: `^(TICKET-[0-9]+):`, NotFound: `^no ticket`},
	}}}, tools.DemoConfig{Tickets: h.tickets})
	if err != nil {
		t.Fatal(err)
	}
	h.acts.Exec.Tools = set
	h.acts.Guard.Probe = h.acts.Exec.Probe
	var mu sync.Mutex
	var keys []string
	h.env.OnActivity(activities.NameCallTool, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.StepInput) (json.RawMessage, error) {
			if in.Step.Name != ticketStep {
				return h.acts.CallTool(ctx, in)
			}
			mu.Lock()
			keys = append(keys, in.Step.Settle.Key)
			mu.Unlock()
			if activity.GetInfo(ctx).Attempt > 1 {
				return h.acts.CallTool(ctx, in)
			}
			// The first attempt: the guard's start, the effect, then death.
			guarded := agent.Step{Name: activities.GuardStep(in), Kind: agent.KindWrite, Settle: in.Step.Settle}
			if _, err := h.acts.Guard.RunStep(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, guarded, func(ctx context.Context) (json.RawMessage, error) {
				step, err := h.acts.Exec.Prepare(ctx, in.Step)
				if err != nil {
					return nil, err
				}
				if _, err := h.acts.Exec.Execute(ctx, step); err != nil {
					return nil, err
				}
				return nil, errors.New("the worker died before it reported")
			}); err == nil {
				t.Error("the first attempt did not fail")
			}
			return nil, errors.New("the worker died before it reported")
		})
	h.at(time.Minute, func() {
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 || h.modelCalls() != 3 {
		t.Fatalf("answer %q, %d tickets, %d model calls; want TICKET-1, 1, 3", r.Answer, h.ticketCount(t), h.modelCalls())
	}
	if len(keys) != 2 || keys[0] != keys[1] || !strings.HasPrefix(keys[0], "agentrun-") {
		t.Fatalf("keys of the attempts %q, want the same key twice", keys)
	}
	ts, _ := tools.ReadTickets(h.tickets)
	if ts[0].RequestID != keys[0] {
		t.Fatalf("the ticket's request id %q, want the key %q", ts[0].RequestID, keys[0])
	}
	s := h.state(t)
	if len(s.Settled) != 1 || s.Settled[0].Step != ticketStep || s.Settled[0].Settled.By != agent.SettledByProbe ||
		s.Settled[0].Settled.Probe == nil || s.Settled[0].Settled.Probe.Verdict != agent.ProbeFound {
		t.Fatalf("state settled %+v, want %s settled by probe, found", s.Settled, ticketStep)
	}
	var rec *workflows.StepRecord
	for i := range s.Steps {
		if s.Steps[i].Name == ticketStep {
			rec = &s.Steps[i]
		}
	}
	if rec == nil || rec.Settled == nil || rec.Preview != "TICKET-1" {
		t.Fatalf("step record %+v, want TICKET-1 with its settlement", rec)
	}
	recs, err := h.acts.Guard.Store.Load("hand-1")
	if err != nil {
		t.Fatal(err)
	}
	var types []journal.RecordType
	for _, rec := range recs {
		types = append(types, rec.Type)
	}
	if want := []journal.RecordType{journal.StepStarted, journal.StepProbed, journal.StepCompleted}; !slices.Equal(types, want) {
		t.Fatalf("guard records %v, want %v", types, want)
	}
}

func ptr[T any](v T) *T { return &v }
