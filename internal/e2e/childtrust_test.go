package e2e

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// TestForgedChildReportsOnDevServer: while the child waits for approval,
// anyone with namespace rights sends its parent reports under the child's
// id: other arguments beside the real digest, a false Running, an
// indeterminate step of 3,000 bytes, and a billion model calls. After
// each one the parent has taken, it is up and shows the child's real
// wait, arguments, digest and counts; it stays listed as waiting, accepts
// a budget raise, and an approval through it files exactly 1 ticket.
func TestForgedChildReportsOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(subAgentFixture(t, t.TempDir(), nil, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-forged-child"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "plan the access request"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	cst := waitStatus(t, srv, child, "AwaitingApproval", time.Minute)
	testenv.WaitFor(t, time.Minute, "the parent to show the child's approval", func() bool {
		st, err := state(t, srv, run)
		return err == nil && st.Status == agent.StatusAwaitingApproval && st.Child != nil
	})
	real := cst.Pending[0]
	pending := func(args string) string {
		return `[{"marker":"` + childMarker + `","tool":"create_ticket","args":` + args + `,"digest":"` + real.Digest + `"}]`
	}
	forged := []string{
		`{"run":"` + child + `","status":"AwaitingApproval","pending":` + pending(`{"title":"Drop the orders database","body":"approved by nobody"}`) + `,"turns":1,"usage":{"input_tokens":1,"output_tokens":1},"budget":{"MaxTurns":24,"MaxTokens":0}}`,
		`{"run":"` + child + `","status":"Running","turns":1,"usage":{"input_tokens":1,"output_tokens":1},"budget":{"MaxTurns":24,"MaxTokens":0}}`,
		`{"run":"` + child + `","status":"Indeterminate","indeterminate":"tool/1/0/` + strings.Repeat("x", 3000) + `","turns":1,"usage":{"input_tokens":1,"output_tokens":1},"budget":{"MaxTurns":24,"MaxTokens":0}}`,
		`{"run":"` + child + `","status":"AwaitingApproval","pending":` + pending(string(real.Args)) + `,"turns":1000000000,"usage":{"input_tokens":1000000000000,"output_tokens":1},"budget":{"MaxTurns":2000000000,"MaxTokens":0}}`,
	}
	for i, in := range forged {
		seen := signalsTaken(t, srv, run, workflows.SignalChild)
		f.temporal(t, "workflow", "signal", "-w", run, "--name", workflows.SignalChild, "--input", in)
		testenv.WaitFor(t, time.Minute, "the parent to take forged report "+strconv.Itoa(i+1), func() bool {
			return signalsTaken(t, srv, run, workflows.SignalChild) > seen
		})
		desc, err := srv.Describe(t, run)
		if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("parent after forged report %d: workflow status %v (%v), want Running", i+1, desc.GetWorkflowExecutionInfo().GetStatus(), err)
		}
		st, err := state(t, srv, run)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != agent.StatusAwaitingApproval || st.Child == nil || st.Child.Run != child || len(st.Pending) != 1 || st.Pending[0].Marker != childMarker {
			t.Fatalf("parent after forged report %d: %+v (child %+v); want the child's real wait", i+1, st, st.Child)
		}
		if !sameJSON(st.Pending[0].Args, real.Args) || st.Pending[0].Digest != real.Digest || st.Pending[0].Digest != agent.ArgsDigest(st.Pending[0].Args, nil) {
			t.Fatalf("parent after forged report %d shows arguments %s (digest %s); the child's are %s (%s)", i+1, st.Pending[0].Args, st.Pending[0].Digest, real.Args, real.Digest)
		}
		if st.Child.Turns != 1 || st.Child.Budget.MaxTurns != 24 {
			t.Fatalf("parent after forged report %d: the child made %d model calls of %d; want 1 of 24", i+1, st.Child.Turns, st.Child.Budget.MaxTurns)
		}
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", run, "50"); code != 0 {
		t.Fatalf("reconcile budget %s 50 after the forged reports: exit %d\n%s", run, code, out)
	}
	if st, err := state(t, srv, run); err != nil || st.Budget.MaxTurns != 50 || st.Status != agent.StatusAwaitingApproval {
		t.Fatalf("parent after the raise: %+v (%v); want AwaitingApproval with 50 model calls", st, err)
	}
	f.waitListed(t, run, `AgentRunStatus="AwaitingApproval" AND AgentRunStep="`+childMarker+` in run `+child+`"`)
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, childMarker); code != 0 {
		t.Fatalf("reconcile approve PARENT CHILD-MARKER: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, env, 2*time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "The filer says: filed TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	replayHistory(t, f, run)
	replayHistory(t, f, child)
}

// signalsTaken counts the signals named name in the run's history that a
// workflow task completed after: those the run has taken.
func signalsTaken(t *testing.T, srv *testenv.Server, runID, name string) int {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	arrived, taken := 0, 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == name {
			arrived++
		}
		if e.GetWorkflowTaskCompletedEventAttributes() != nil {
			taken = arrived
		}
	}
	return taken
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// TestEndedChildChargedOnDevServer: a planner allowed 4 model calls
// delegates to an agent that makes 3 (its share) and parks
// BudgetExceeded; the child is then ended on its own, cancelled in one
// tree and terminated in another. The parent counts the child's 3 calls
// and their tokens: with its own 1 it is at its limit, and parks
// BudgetExceeded instead of making a 5th call.
func TestEndedChildChargedOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	look := llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)}}}
	env := f.env(subAgentFixture(t, t.TempDir(), []llm.Turn{look, look, look, {Text: "looked it up three times"}}, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	for _, end := range []string{"cancel", "terminate"} {
		run := "e2e-ended-child-" + end
		child := agent.ChildRunID(run, "tool/1/0/filer")
		if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--max-turns", "4", "plan it"); code != 0 {
			t.Fatalf("starter: exit %d\n%s", code, out)
		}
		if cst := waitStatus(t, srv, child, "BudgetExceeded", time.Minute); cst.Turns != 3 || cst.Budget.MaxTurns != 3 {
			t.Fatalf("child %s: %d model calls of %d; want 3 of 3", child, cst.Turns, cst.Budget.MaxTurns)
		}
		if end == "cancel" {
			f.temporal(t, "workflow", "cancel", "-w", child)
		} else {
			f.temporal(t, "workflow", "terminate", "-w", child, "--reason", "ended by hand")
		}
		var st workflows.State
		testenv.WaitFor(t, time.Minute, run+" to park on its own budget", func() bool {
			s, err := state(t, srv, run)
			st = s
			return err == nil && s.Child == nil && s.StepCount >= 2 && s.Status != agent.StatusRunning
		})
		own, childOwn := ownUsage(t, srv, run), ownUsage(t, srv, child)
		if st.Status != agent.StatusBudgetExceeded || st.Delegated != 3 || !strings.Contains(st.Reason, "made 4 model calls") {
			t.Fatalf("%s after its child's %s: %s (%s), %d delegated calls; want BudgetExceeded with the child's 3 calls counted", run, end, st.Status, st.Reason, st.Delegated)
		}
		if st.Usage != own.Add(childOwn) || childOwn.Total() == 0 {
			t.Fatalf("%s usage %+v; want its own %+v plus the child's %+v", run, st.Usage, own, childOwn)
		}
		if p, c := modelCalls(t, srv, run), modelCalls(t, srv, child); p != 1 || c != 3 {
			t.Fatalf("%s model calls: parent %d, child %d; want 1 and 3", run, p, c)
		}
	}
}
