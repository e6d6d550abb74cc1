package e2e

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// The hand example's ticket, as create_ticket files it and find_ticket
// answers about it.
const (
	ticketTitle  = hand.TicketTitle
	ticketAnswer = "TICKET-1: " + ticketTitle
)

// keyOnly declares create_ticket with an idempotency key alone; the
// probes are testenv's.
var keyOnly = map[string]any{"idempotency_key": "request_id"}

// ticketTools writes a tools file declaring create_ticket's override (nil:
// the shipped tools/demo-tools.json) to a temporary folder and returns
// the AGENTRUN_TOOLS setting naming it.
func ticketTools(t *testing.T, override map[string]any) string {
	t.Helper()
	return "AGENTRUN_TOOLS=" + testenv.ToolsFile(t, override)
}

// crashInTicket runs the hand example on a worker that holds create_ticket
// (hold is the hold variable: before or after its effect), approves the
// ticket, waits until the worker holds it, SIGKILLs it and starts a worker
// without the hold, which serves metrics. It returns the run's first run
// id (its run key) and the second worker's metrics URL.
func crashInTicket(t *testing.T, f *fleet, toolsEnv, hold, run string) (string, string) {
	t.Helper()
	w1 := testenv.Start(t, f.env(toolsEnv, hold+"=create_ticket"), testenv.Program(t, "worker"))
	if code, out := testenv.Run(t, f.env(toolsEnv), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, f.srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	testenv.CrashInTicket(t, w1, hold, f.tickets)
	_, base := startMetricsWorker(t, f, toolsEnv)
	desc, err := f.srv.Describe(t, run)
	if err != nil {
		t.Fatal(err)
	}
	return desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), base + "/metrics"
}

// settledMetric returns agentrun_writes_settled_total of the worker
// serving metrics at url, the series with labels.
func settledMetric(t *testing.T, url string, labels ...string) float64 {
	t.Helper()
	code, body := httpGet(url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return sum(body, "agentrun_writes_settled_total", labels...)
}

// TestSettleTemporal: a worker running the hand example's create_ticket
// is SIGKILLed before or after the ticket is filed, and the write declares
// how it is settled. A second worker settles it without a person: the run
// is never Indeterminate and completes naming the one ticket, after 3
// model calls; the state query's settled list and the step's record say
// how (by probe, found or not found, or by key, with the key the run
// derives), and the history shows the killed attempt and the settling one.
func TestSettleTemporal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		override map[string]any // nil: tools/demo-tools.json
		hold     string
		keyed    bool          // the write has an idempotency key
		want     agent.Settled // Key is filled in when keyed
		answer   string        // the metric's answer label
	}{
		{"ProbeFoundAfterEffect", testenv.ProbeByTitle, testenv.HoldAfter, false, agent.Settled{By: agent.SettledByProbe,
			Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeFound, Answer: ticketAnswer}, Runs: 1}, "found"},
		{"ProbeNotFoundBeforeEffect", nil, testenv.HoldBefore, true, agent.Settled{By: agent.SettledByProbe,
			Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeNotFound}, Runs: 2}, "not_found"},
		{"KeyAfterEffect", keyOnly, testenv.HoldAfter, true, agent.Settled{By: agent.SettledByKey, Runs: 2}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.DevServer(t)
			f := newFleet(t, srv)
			run := "e2e-settle-" + strings.ToLower(tc.name)
			runKey, metricsURL := crashInTicket(t, f, ticketTools(t, tc.override), tc.hold, run)

			if a := answer(t, srv, run); !strings.Contains(a, "TICKET-1") {
				t.Fatalf("answer %q does not name TICKET-1", a)
			}
			want := testenv.SettledTicket(t, f.tickets, tc.want, tc.keyed, runKey)

			final, err := state(t, srv, run)
			if err != nil {
				t.Fatal(err)
			}
			if final.Status != agent.StatusCompleted || final.Indeterminate != "" || final.Why != "" {
				t.Fatalf("final state: status %s, indeterminate %q (%s); want Completed, none", final.Status, final.Indeterminate, final.Why)
			}
			if wantSettled := []workflows.SettledStep{{Step: ticketStep, Settled: want}}; !reflect.DeepEqual(final.Settled, wantSettled) {
				t.Fatalf("state settled:\n %s\nwant\n %s", testenv.MustJSON(final.Settled), testenv.MustJSON(wantSettled))
			}
			var rec *workflows.StepRecord
			for i := range final.Steps {
				if final.Steps[i].Name == ticketStep {
					rec = &final.Steps[i]
				}
			}
			if rec == nil || rec.Reconciled || rec.Settled == nil || !reflect.DeepEqual(*rec.Settled, want) {
				t.Fatalf("the step record of %s: %s; want settled %s, not reconciled", ticketStep, testenv.MustJSON(rec), testenv.MustJSON(want))
			}

			h := history(t, srv, run)
			if h.attempts[ticketStep] != 2 || len(h.failed) != 0 {
				t.Fatalf("attempts %v, failed %q; want %s attempt 2 (the killed one, then the one that settled it) and no failure", h.attempts, h.failed, ticketStep)
			}
			if n := count(h.statuses, "Indeterminate"); n != 0 || last(h.statuses) != "Completed" {
				t.Fatalf("AgentRunStatus over the run: %q; want never Indeterminate and Completed last", h.statuses)
			}
			if n := modelCalls(t, srv, run); n != 3 {
				t.Fatalf("model calls: %d, want 3", n)
			}
			by, answer := `by="`+tc.want.By+`"`, `answer="`+tc.answer+`"`
			if n, all := settledMetric(t, metricsURL, by, answer), settledMetric(t, metricsURL); n != 1 || all != 1 {
				t.Fatalf("agentrun_writes_settled_total{%s,%s} = %v of %v in all, want 1 of 1", by, answer, n, all)
			}
		})
	}
}

// TestSettleTemporalProbeUnknown: the worker holding create_ticket after
// the ticket is filed is SIGKILLed, and the write's probe cannot tell
// (its expressions match neither of find_ticket's answers, or find_ticket
// refuses its arguments). The run becomes Indeterminate as without a
// probe, the state's reason carries the probe's answer, and reconcile
// done completes it as before: 1 ticket, 3 model calls, nothing settled
// without a person.
func TestSettleTemporalProbeUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		override map[string]any
		answer   string
	}{
		{"Unclear", testenv.ProbeUnclear, "it matches neither found nor not_found: " + ticketAnswer},
		{"Refused", testenv.ProbeRefused, `an error: find_ticket wants {"request_id": "..."} or {"title": "..."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.DevServer(t)
			f := newFleet(t, srv)
			run := "e2e-settle-unknown-" + strings.ToLower(tc.name)
			toolsEnv := ticketTools(t, tc.override)
			_, metricsURL := crashInTicket(t, f, toolsEnv, testenv.HoldAfter, run)

			st := waitStatus(t, srv, run, "Indeterminate", 2*time.Minute)
			wantWhy := ticketStep + " started on an earlier attempt and never recorded its result; probe find_ticket answered unknown: " +
				tc.answer + "; check whether it took effect, then reconcile it (done RESULT or retry)"
			if st.Indeterminate != ticketStep || st.Why != wantWhy {
				t.Fatalf("indeterminate state: step %q, why %q; want %s, %q", st.Indeterminate, st.Why, ticketStep, wantWhy)
			}
			f.waitListed(t, run, `AgentRunStatus="Indeterminate" AND AgentRunStep="`+ticketStep+`"`)
			if n := f.ticketCount(t); n != 1 {
				t.Fatalf("tickets: %d, want 1", n)
			}
			code, out := testenv.Run(t, f.env(toolsEnv), time.Minute, testenv.Program(t, "reconcile"), "done", run, ticketStep, "TICKET-1")
			if code != 0 {
				t.Fatalf("reconcile done: exit %d\n%s", code, out)
			}
			if a := answer(t, srv, run); !strings.Contains(a, "TICKET-1") {
				t.Fatalf("answer %q does not name the reconciled TICKET-1", a)
			}
			final, err := state(t, srv, run)
			if err != nil {
				t.Fatal(err)
			}
			if final.Status != agent.StatusCompleted || len(final.Settled) != 0 {
				t.Fatalf("final state: status %s, settled %s; want Completed, nothing settled without a person", final.Status, testenv.MustJSON(final.Settled))
			}
			for _, s := range final.Steps {
				if s.Name == ticketStep && (!s.Reconciled || s.Settled != nil) {
					t.Fatalf("the step record of %s: %s; want reconciled by a person", ticketStep, testenv.MustJSON(s))
				}
			}
			h := history(t, srv, run)
			if want := []string{ticketStep + ": " + activities.ErrTypeIndeterminate}; h.attempts[ticketStep] != 2 || !reflect.DeepEqual(h.failed, want) {
				t.Fatalf("attempts %v, failed %q; want %s attempt 2 and failed %q", h.attempts, h.failed, ticketStep, want)
			}
			if n := count(h.statuses, "Indeterminate"); n != 1 || last(h.statuses) != "Completed" {
				t.Fatalf("AgentRunStatus over the run: %q; want Indeterminate once and Completed last", h.statuses)
			}
			if n := modelCalls(t, srv, run); n != 3 {
				t.Fatalf("model calls: %d, want 3", n)
			}
			if n := f.ticketCount(t); n != 1 {
				t.Fatalf("tickets: %d, want 1", n)
			}
			if n := settledMetric(t, metricsURL); n != 0 {
				t.Fatalf("agentrun_writes_settled_total = %v, want 0: a person settled it", n)
			}
		})
	}
}

// TestSettleMCPProbe: a worker SIGKILLed after the memory server's
// create_entities (a write, not idempotent) took effect and before the
// guard recorded its result. The write declares a probe on the server's
// open_nodes, whose real answer lists the entity; a second worker asks it,
// and the step completes with the entity's name without running again: the
// run is never Indeterminate, the memory file holds the entity once and is
// the file the killed call wrote, and the state says settled by probe,
// found.
func TestSettleMCPProbe(t *testing.T) {
	t.Parallel()
	m := newMCPFleetTools(t, `{"turns": [
		{"tool_calls": [{"name": "create_entities", "args": {"entities": [{"name": "agentrun-e2e", "entityType": "project", "observations": ["durable agent runs"]}]}}]},
		{"text": "Stored: {{last_tool_result}}"}
	]}`, map[string]any{
		"create_entities": map[string]any{"approval": "never", "probe": map[string]any{
			"tool": "open_nodes", "args": map[string]any{"names": []string{"{{args.entities.0.name}}"}},
			// open_nodes answers {"entities": [...], "relations": [...]},
			// pretty-printed; an absent name leaves the list empty.
			"found": `"entities": \[\s*\{\s*"name": "([^"]+)"`, "not_found": `"entities": \[\]`,
		}},
	})
	const (
		run  = "e2e-settle-mcp"
		step = "tool/1/0/create_entities"
	)
	w1 := testenv.Start(t, m.env(holdAfter("create_entities")), testenv.Program(t, "worker"))
	m.start(t, run)
	m.waitHeld(t, w1, "create_entities")
	const entity = `{"type":"entity","name":"agentrun-e2e","entityType":"project","observations":["durable agent runs"]}`
	written := m.memory(t, entity)
	w1.Kill(t)
	testenv.Start(t, m.env(), testenv.Program(t, "worker"))

	res := m.result(t, run)
	if want := "Stored: agentrun-e2e"; res.Answer != want || res.Steps != 3 {
		t.Fatalf("result %+v, want answer %q over 3 steps", res, want)
	}
	if now := m.memory(t, entity); !os.SameFile(written, now) {
		t.Fatalf("the memory file was rewritten after the kill: create_entities ran again")
	}
	final, err := state(t, m.srv, run)
	if err != nil {
		t.Fatal(err)
	}
	// open_nodes' whole answer, on one line as answers are kept.
	const answer = `{ "entities": [ { "name": "agentrun-e2e", "entityType": "project", "observations": [ "durable agent runs" ] } ], "relations": [] }`
	want := []workflows.SettledStep{{Step: step, Settled: agent.Settled{By: agent.SettledByProbe,
		Probe: &agent.ProbeAnswer{Tool: "open_nodes", Verdict: agent.ProbeFound, Answer: answer}, Runs: 1}}}
	if final.Status != agent.StatusCompleted || !reflect.DeepEqual(final.Settled, want) {
		t.Fatalf("final state: status %s, settled %s; want Completed, settled %s", final.Status, testenv.MustJSON(final.Settled), testenv.MustJSON(want))
	}
	h := history(t, m.srv, run)
	wantAttempts := map[string]int32{"tools": 1, "llm/1": 1, step: 2, "llm/2": 1}
	if !reflect.DeepEqual(h.attempts, wantAttempts) || len(h.failed) != 0 {
		t.Fatalf("activity attempts %v, failed %q; want %v and none failed", h.attempts, h.failed, wantAttempts)
	}
	if n := count(h.statuses, "Indeterminate"); n != 0 || last(h.statuses) != "Completed" {
		t.Fatalf("AgentRunStatus over the run: %q; want never Indeterminate and Completed last", h.statuses)
	}
	if n := modelCalls(t, m.srv, run); n != 2 {
		t.Fatalf("model calls: %d, want 2", n)
	}
}
