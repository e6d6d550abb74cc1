package workflows_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// chain runs a run to its end across continue-as-new: each execution in a
// fresh test environment sharing the harness's activities and stores, with
// the callbacks setup registers for it (by execution, from 0). It returns
// the executions' inputs.
func (h *harness) chain(t *testing.T, in workflows.Input, setup func(run int)) []workflows.Input {
	t.Helper()
	var inputs []workflows.Input
	for run := 0; ; run++ {
		if run > 0 {
			h.newEnv(t)
			// As the server does on a continue-as-new: continued is
			// honoured only with it.
			h.env.SetContinuedExecutionRunID(fmt.Sprintf("run-%d", run-1))
		}
		if setup != nil {
			setup(run)
		}
		inputs = append(inputs, in)
		h.env.ExecuteWorkflow(workflows.AgentRun, in)
		var can *workflow.ContinueAsNewError
		if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
			return inputs
		}
		if can.WorkflowType.Name != workflows.WorkflowName {
			t.Fatalf("continued as %s, want %s", can.WorkflowType.Name, workflows.WorkflowName)
		}
		in = workflows.Input{}
		if err := h.dc.FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Continued == nil {
			t.Fatalf("execution %d continued without a checkpoint", run)
		}
		if run > 200 {
			t.Fatal("more than 200 executions")
		}
	}
}

// longScript reads the policy turns times, asks to file a ticket at turn
// ticketAt, and answers with the ticket's id.
func longScript(turns, ticketAt int) llm.Script {
	var s llm.Script
	for i := 1; i < turns; i++ {
		call := llm.ScriptedCall{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"topic":"access %d"}`, i))}
		if i == ticketAt {
			call = llm.ScriptedCall{Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access","body":"policy says so"}`)}
		}
		s.Turns = append(s.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{call}})
	}
	s.Turns = append(s.Turns, llm.Turn{Text: "Filed as " + llm.LastToolResult + "."})
	return s
}

// TestContinueAsNewSameRun: a run that continues as new every few steps
// completes with the same answer, model calls, tool calls, activity ids and
// usage as one that never does; its step numbering goes on across
// executions, and every checkpoint stays small.
func TestContinueAsNewSameRun(t *testing.T) {
	t.Parallel()
	const turns, ticketAt = 12, 11
	ticket := fmt.Sprintf("tool/%d/0/create_ticket", ticketAt)
	type outcome struct {
		answer string
		ids    string
		model  int
		tools  int
		usage  agent.Usage
		steps  int
		runs   int
	}
	run := func(every int) outcome {
		h := newScriptHarness(t, longScript(turns, ticketAt))
		in := workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: 40, ContinueAfter: every}
		inputs := h.chain(t, in, func(int) {
			// Approve whenever the ticket waits, in whichever execution.
			h.at(time.Hour, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticket}) })
		})
		for i, in := range inputs {
			b, _ := json.Marshal(in)
			if len(b) > 64<<10 {
				t.Fatalf("execution %d: input of %d bytes, want at most 64 KiB", i, len(b))
			}
		}
		r := h.result(t)
		st := h.state(t)
		if st.Runs != len(inputs)-1 {
			t.Errorf("state says %d earlier executions, want %d", st.Runs, len(inputs)-1)
		}
		return outcome{r.Answer, strings.Join(h.ids, " "), h.started["CallModel"], h.started["CallTool"], r.Usage, r.Steps, len(inputs)}
	}
	plain, continued := run(0), run(2)
	if plain.runs != 1 || continued.runs < turns {
		t.Fatalf("executions: %d without, %d with continue-as-new every 2 steps; want 1 and at least %d", plain.runs, continued.runs, turns)
	}
	if !strings.Contains(plain.answer, "TICKET-1") || plain.model != turns || plain.tools != turns-1 || plain.steps != 2*turns-1 {
		t.Fatalf("plain run: %+v; want TICKET-1, %d model calls, %d tool calls", plain, turns, turns-1)
	}
	continued.runs = plain.runs
	if continued != plain {
		t.Fatalf("with continue-as-new:\n%+v\nwithout:\n%+v", continued, plain)
	}
}

// TestContinueAsNewKeepsOperatorInputs: an approval decided just before a
// continue-as-new, an Indeterminate write reconciled across one, and
// signals that arrive together with the switch (two approvals and a bad
// payload in one task) all behave as without continue-as-new.
func TestContinueAsNewKeepsOperatorInputs(t *testing.T) {
	t.Parallel()
	t.Run("approval and indeterminate", func(t *testing.T) {
		t.Parallel()
		for _, outcome := range []string{"done", "retry"} {
			h := newHarness(t)
			var waited []string
			h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), ContinueAfter: 1}, func(run int) {
				h.mockIndeterminate()
				h.at(time.Minute, func() {
					if s := h.state(t); s.Status == agent.StatusAwaitingApproval {
						waited = append(waited, fmt.Sprintf("%d:%s", run, s.Status))
						h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
					}
				})
				h.at(time.Hour, func() {
					if s := h.state(t); s.Status == agent.StatusIndeterminate && s.Indeterminate == ticketStep {
						waited = append(waited, fmt.Sprintf("%d:%s", run, s.Status))
						p := map[string]string{"Step": ticketStep, "Outcome": outcome}
						if outcome == "done" {
							p["Result"] = "TICKET-7"
						}
						h.env.SignalWorkflow(operator.SignalReconcile, p)
					}
				})
			})
			r := h.result(t)
			if len(waited) != 2 {
				t.Fatalf("%s: waits seen %v, want one approval and one Indeterminate", outcome, waited)
			}
			want, tickets := "TICKET-7", 0
			if outcome == "retry" {
				want, tickets = "TICKET-1", 1
				if !contains(h.ids, ticketStep+"#2") {
					t.Fatalf("retry: activity ids %v lack %s#2 (the generation crossed the switch)", h.ids, ticketStep)
				}
			}
			if !strings.Contains(r.Answer, want) || h.ticketCount(t) != tickets || h.modelCalls() != 3 {
				t.Fatalf("%s: answer %q, %d tickets, %d model calls; want %s, %d, 3", outcome, r.Answer, h.ticketCount(t), h.modelCalls(), want, tickets)
			}
		}
	})
	t.Run("signals with the switch", func(t *testing.T) {
		t.Parallel()
		// One turn asks for two tickets; both wait for approval.
		script := llm.Script{Turns: []llm.Turn{
			{ToolCalls: []llm.ScriptedCall{
				{Name: "create_ticket", Args: json.RawMessage(`{"title":"a","body":"a"}`)},
				{Name: "create_ticket", Args: json.RawMessage(`{"title":"b","body":"b"}`)},
			}},
			{Text: "Filed " + llm.LastToolResult + "."},
		}}
		a, b := "tool/1/0/create_ticket", "tool/1/1/create_ticket"
		h := newScriptHarness(t, script)
		var rejected []workflows.Rejected
		inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), ContinueAfter: 1}, func(run int) {
			h.at(time.Minute, func() {
				if s := h.state(t); s.Status == agent.StatusAwaitingApproval && len(s.Pending) == 2 {
					// Three inputs in one workflow task: the first makes the
					// run continue as new before its next step.
					h.env.SignalWorkflowSkippingWorkflowTask(operator.SignalApprove, map[string]string{"Marker": a})
					h.env.SignalWorkflowSkippingWorkflowTask(operator.SignalApprove, map[string]string{"Marker": b})
					h.env.SignalWorkflow(operator.SignalApprove, jsonPayload(`{"Marker":7}`))
				}
			})
			h.at(2*time.Minute, func() {
				if s := h.state(t); s.Status == agent.StatusAwaitingApproval {
					t.Errorf("execution %d waits again for %+v: an approval was lost in the switch", run, s.Pending)
				}
			})
		})
		r := h.result(t)
		rejected = h.state(t).Rejected
		if h.ticketCount(t) != 2 || !strings.Contains(r.Answer, "TICKET-2") || len(inputs) < 3 {
			t.Fatalf("answer %q, %d tickets, %d executions; want TICKET-2, 2 tickets, at least 3 executions", r.Answer, h.ticketCount(t), len(inputs))
		}
		if len(rejected) != 1 || !strings.Contains(rejected[0].Reason, "cannot unmarshal number") {
			t.Fatalf("rejected %+v, want the bad payload recorded across the switch", rejected)
		}
	})
	t.Run("signal during the step before the switch", func(t *testing.T) {
		t.Parallel()
		// The lookup takes ten minutes; at five, an approval for a marker
		// that is not pending arrives. It is refused (as without
		// continue-as-new) and the refusal survives the switch that follows
		// the lookup. (The test environment gives the signal a task of its
		// own; on a server it may share the switch's task, where the drain
		// in continueAsNew applies it.)
		h := newHarness(t)
		early := hand.LookupStep
		h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), ContinueAfter: 1}, func(run int) {
			h.env.OnActivity(activities.NameCallTool, mock.Anything, mock.Anything).After(10 * time.Minute).Return(h.acts.CallTool)
			h.at(5*time.Minute, func() {
				if s := h.state(t); s.Status == agent.StatusRunning && s.StepCount == 1 {
					h.env.SignalWorkflowSkippingWorkflowTask(operator.SignalApprove, map[string]string{"Marker": early})
				}
			})
			h.at(time.Hour, func() {
				if s := h.state(t); s.Status == agent.StatusAwaitingApproval {
					h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
				}
			})
		})
		r := h.result(t)
		rej := h.state(t).Rejected
		if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
			t.Fatalf("answer %q, %d model calls, %d tickets; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
		}
		if len(rej) != 1 || !strings.Contains(rej[0].Reason, "marker "+early+" is not awaiting approval") {
			t.Fatalf("rejected %+v, want the approval sent during the switch recorded as rejected", rej)
		}
	})
}
