package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// The sub-agent fixture: a planner whose first reply calls the agent tool
// filer, and whose second answers with what filer said; filer files one
// ticket (create_ticket, gated by approval) and answers with its id.
const (
	plannerTask = "File a ticket for read access to the orders database."
	childMarker = "tool/1/0/create_ticket"
)

// subAgentFixture writes the scripts and the tools file into dir and
// returns the environment of a worker that runs them. filerTurns, when
// not nil, replaces filer's script.
func subAgentFixture(t *testing.T, dir string, filerTurns []llm.Turn, agentExtra map[string]any) []string {
	t.Helper()
	planner := llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "filer", Args: json.RawMessage(testenv.MustJSON(map[string]string{"task": plannerTask}))}}},
		{Text: "The filer says: {{last_tool_result}}", TextOnError: "The filer failed: {{last_tool_result}}"},
	}}
	filer := llm.Script{Turns: filerTurns}
	if filer.Turns == nil {
		filer.Turns = []llm.Turn{
			{ToolCalls: []llm.ScriptedCall{{Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access to the orders database","body":"Filed by the filer agent."}`)}}},
			{Text: "filed {{last_tool_result}}", TextOnError: "nothing filed: {{last_tool_result}}"},
		}
	}
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(testenv.MustJSON(v)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plannerFile, filerFile := write("planner.json", planner), write("filer.json", filer)
	decl := map[string]any{"description": "Files tickets in the ticket system.", "model": "scripted:" + filerFile,
		"system": "You file tickets. Answer with the ticket id.", "tools": []string{"create_ticket", "lookup"}}
	for k, v := range agentExtra {
		decl[k] = v
	}
	tools := write("tools.json", map[string]any{"agents": map[string]any{"filer": decl}})
	return []string{"AGENTRUN_TOOLS=" + tools, "AGENTRUN_MODEL=scripted:" + plannerFile}
}

// ownUsage is the usage of a run's own model steps, read from its history.
func ownUsage(t *testing.T, srv *testenv.Server, runID string) agent.Usage {
	t.Helper()
	dc := testenv.SuiteConverter(t)
	var u agent.Usage
	modelEvents(t, srv, runID, func(e *historypb.HistoryEvent) {
		a := e.GetActivityTaskCompletedEventAttributes()
		if a == nil {
			return
		}
		var raw json.RawMessage
		if err := dc.FromPayloads(a.GetResult(), &raw); err != nil {
			t.Fatal(err)
		}
		reply, err := agent.DecodeModelReply(raw)
		if err != nil {
			t.Fatal(err)
		}
		u = u.Add(reply.Usage)
	})
	return u
}

// TestSubAgentOnDevServer: a planner delegates to the filer agent, a
// child AgentRun workflow. The child's approval shows on the parent (its
// status, AgentRunStep, current details, state.Child, reconcile list), and
// reconcile approve sent to the parent with the child's marker reaches
// it. One ticket; two model calls in each run; the parent's usage is its
// own plus the child's; the parent's answer carries the child's. Both
// histories replay.
func TestSubAgentOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(subAgentFixture(t, t.TempDir(), nil, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-agent"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if child != "e2e-agent.tool.1.0.filer" {
		t.Fatalf("child run id %q", child)
	}

	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "plan the access request"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	var st workflows.State
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		if st, err = state(t, srv, run); err == nil && st.Status == agent.StatusAwaitingApproval {
			break
		}
		if time.Now().After(deadline) {
			c, cerr := state(t, srv, child)
			it := srv.Client.GetWorkflowHistory(t.Context(), child, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				if e, err := it.Next(); err == nil && e.GetWorkflowTaskFailedEventAttributes() != nil {
					t.Logf("child task failed: %s", e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
					break
				}
			}
			t.Fatalf("the parent does not show the child's approval: parent %+v (%v); child %+v (%v)", st, err, c, cerr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Child == nil || st.Child.Run != child || st.Child.Agent != "filer" || st.Child.Step != "tool/1/0/filer" || len(st.Pending) != 1 || st.Pending[0].Marker != childMarker {
		t.Fatalf("parent state while the child waits: %+v (child %+v)", st, st.Child)
	}
	cst := waitStatus(t, srv, child, "AwaitingApproval", time.Minute)
	if len(cst.Pending) != 1 || cst.Pending[0].Marker != childMarker || cst.Turns != 1 {
		t.Fatalf("child state: %+v", cst)
	}
	f.waitListed(t, run, `AgentRunStatus="AwaitingApproval" AND AgentRunStep="`+childMarker+` in run `+child+`"`)
	if d := currentDetails(t, srv, run); !strings.Contains(d, "Waits for its agent `filer` (run `"+child+"`), from step `tool/1/0/filer`") || !strings.Contains(d, "-w "+run+" --name approve") {
		t.Fatalf("parent's current details:\n%s", d)
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "list")
	if code != 0 || !strings.Contains(out, run+"\tAwaitingApproval") || !strings.Contains(out, child+"\tAwaitingApproval") {
		t.Fatalf("reconcile list: exit %d\n%s", code, out)
	}
	if i, j := strings.Index(out, run+"\t"), strings.Index(out, child+"\t"); i < 0 || j < i {
		t.Fatalf("reconcile list: want the child under its parent\n%s", out)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("%d tickets before the approval", n)
	}
	// Hostile inputs: a report from a run that is not the parent's child is
	// dropped; an approval of a marker the child does not wait on is refused
	// by the parent, and nothing reaches the child.
	f.temporal(t, "workflow", "signal", "-w", run, "--name", workflows.SignalChild, "--input", `{"run":"someone-else","status":"Running","turns":0,"usage":{"input_tokens":0,"output_tokens":0},"budget":{"MaxTurns":1,"MaxTokens":0}}`)
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, "tool/9/0/create_ticket"); code != 1 || !strings.Contains(out, "tool/9/0/create_ticket") {
		t.Fatalf("reconcile approve of a marker nobody waits on: exit %d\n%s", code, out)
	}
	if st, err := state(t, srv, run); err != nil || st.Status != agent.StatusAwaitingApproval || st.Child == nil || st.Child.Run != child || len(st.Pending) != 1 || st.Pending[0].Marker != childMarker {
		t.Fatalf("after the forged report: %+v (%v)", st, err)
	}
	if cst, err := state(t, srv, child); err != nil || len(cst.Rejected) != 0 || cst.Status != agent.StatusAwaitingApproval {
		t.Fatalf("the child after the refused approval: %+v (%v)", cst, err)
	}

	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, childMarker); code != 0 || !strings.Contains(out, "it is now Running") {
		t.Fatalf("reconcile approve PARENT CHILD-MARKER: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, 2*time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "The filer says: filed TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	if p, c := modelCalls(t, srv, run), modelCalls(t, srv, child); p != 2 || c != 2 {
		t.Fatalf("model calls: parent %d, child %d; want 2 and 2", p, c)
	}
	st, err := state(t, srv, run)
	if err != nil {
		t.Fatal(err)
	}
	cst, err = state(t, srv, child)
	if err != nil {
		t.Fatal(err)
	}
	own, childOwn := ownUsage(t, srv, run), ownUsage(t, srv, child)
	if cst.Usage != childOwn || st.Usage != own.Add(childOwn) || childOwn.Total() == 0 || st.Delegated != 2 || st.Child != nil {
		t.Fatalf("usage: parent %+v (own %+v), child %+v (own %+v), delegated %d; want the parent's to be the sum", st.Usage, own, cst.Usage, childOwn, st.Delegated)
	}
	if cst.Status != agent.StatusCompleted || st.Status != agent.StatusCompleted {
		t.Fatalf("statuses: parent %s, child %s", st.Status, cst.Status)
	}
	replayHistory(t, f, run)
	replayHistory(t, f, child)
}

// TestSubAgentKilledInWriteOnDevServer: the whole fleet is SIGKILLed while
// the child run's create_ticket runs, after the ticket exists. On a new
// worker the child's write is Indeterminate and the parent shows it (its
// status, the step, AgentRunStep); reconcile done sent to the parent
// settles it; the tree completes with one ticket and the person's result
// in the answer.
func TestSubAgentKilledInWriteOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(append(subAgentFixture(t, t.TempDir(), nil, nil), "AGENTRUN_DEMO_DELAY=20s")...)
	workers := map[int]*testenv.Proc{}
	for range 2 {
		p := testenv.Start(t, env, testenv.Program(t, "worker"))
		workers[p.Cmd.Process.Pid] = p
	}
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-agent-kill"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "plan the access request"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": childMarker}))

	// The ticket is written; its step has not recorded it: every worker dies.
	killRunning(t, srv, workers, child, childMarker, func() bool { return f.ticketCount(t) == 1 })
	for _, w := range workers {
		if w.Running() {
			w.Kill(t)
		}
	}
	testenv.Start(t, env, testenv.Program(t, "worker"))
	st := waitStatus(t, srv, run, "Indeterminate", 2*time.Minute)
	if st.Indeterminate != childMarker || st.Child == nil || st.Child.Run != child {
		t.Fatalf("parent state: %+v (child %+v)", st, st.Child)
	}
	if cst := waitStatus(t, srv, child, "Indeterminate", time.Minute); cst.Indeterminate != childMarker {
		t.Fatalf("child state: %+v", cst)
	}
	f.waitListed(t, run, `AgentRunStatus="Indeterminate" AND AgentRunStep="`+childMarker+` in run `+child+`"`)
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "done", run, childMarker, "TICKET-1"); code != 0 {
		t.Fatalf("reconcile done PARENT CHILD-STEP: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, env, 2*time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "The filer says: filed TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	cst, err := state(t, srv, child)
	if err != nil || cst.Status != agent.StatusCompleted || len(cst.Steps) == 0 || !slicesContainsReconciled(cst.Steps, childMarker) {
		t.Fatalf("child state: %+v (%v); want Completed with %s reconciled", cst, err, childMarker)
	}
}

func slicesContainsReconciled(steps []workflows.StepRecord, name string) bool {
	for _, s := range steps {
		if s.Name == name && s.Reconciled {
			return true
		}
	}
	return false
}

// TestSubAgentBudgetOnDevServer: a planner with a budget of 5 model calls
// delegates to an agent that needs 6. The child gets the 4 left, parks
// BudgetExceeded at 4, and the parent shows it; raising the parent's
// budget gives the child its share (9: what is left of 10 after the
// parent's own call), and the tree completes: 2 model calls in the
// parent, 6 in the child, 8 counted by the parent. A budget sent to the
// child itself is refused, naming the parent.
func TestSubAgentBudgetOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	var turns []llm.Turn
	for range 5 {
		turns = append(turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)}}})
	}
	turns = append(turns, llm.Turn{Text: "looked it up five times"})
	env := f.env(subAgentFixture(t, t.TempDir(), turns, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-agent-budget"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--max-turns", "5", "plan it"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "BudgetExceeded", time.Minute)
	cst := waitStatus(t, srv, child, "BudgetExceeded", time.Minute)
	if cst.Budget.MaxTurns != 4 || cst.Turns != 4 || st.Child == nil || st.Child.Turns != 4 || !strings.Contains(st.Reason, "its limit is 4") {
		t.Fatalf("parked: parent %+v (child %+v); child %+v", st, st.Child, cst)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, "Used: 5 model calls") || !strings.Contains(d, "-w "+run+" --name budget") {
		t.Fatalf("parent's current details:\n%s", d)
	}
	// The child's budget is its share of its parent's: raised there only.
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", child, "50"); code == 0 || !strings.Contains(out, "raise the budget of run "+run+" instead") {
		t.Fatalf("reconcile budget CHILD 50: exit %d, want refused naming %s\n%s", code, run, out)
	}
	// Anyone may ring the child's share: it reads its parent, which has
	// nothing more for it.
	seen := signalsTaken(t, srv, child, workflows.SignalShare)
	f.temporal(t, "workflow", "signal", "-w", child, "--name", workflows.SignalShare, "--input", `{"MaxTurns":50}`)
	testenv.WaitFor(t, time.Minute, "the child to take the ring", func() bool { return signalsTaken(t, srv, child, workflows.SignalShare) > seen })
	if cst, err := state(t, srv, child); err != nil || cst.Budget.MaxTurns != 4 || cst.Status != agent.StatusBudgetExceeded {
		t.Fatalf("child after a budget and a share ring sent to it: %+v (%v); want still 4 model calls, BudgetExceeded", cst, err)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", run, "5"); code == 0 || !strings.Contains(out, "not above the 5 model calls") {
		t.Fatalf("reconcile budget 5: exit %d, want refused\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "budget", run, "10"); code != 0 {
		t.Fatalf("reconcile budget 10: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, env, 2*time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "The filer says: looked it up five times") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if p, c := modelCalls(t, srv, run), modelCalls(t, srv, child); p != 2 || c != 6 {
		t.Fatalf("model calls: parent %d, child %d; want 2 and 6", p, c)
	}
	if st, err := state(t, srv, run); err != nil || st.Delegated != 6 || st.Turns != 2 {
		t.Fatalf("parent state: %+v (%v); want 2 own model calls and 6 delegated", st, err)
	}
	// The child's share after the raise is what was left of the parent's
	// 10 after its own 1 call, not the whole 10.
	if cst, err := state(t, srv, child); err != nil || cst.Budget.MaxTurns != 9 || cst.Turns != 6 {
		t.Fatalf("child state: %d model calls of %d (%v); want 6 of 9", cst.Turns, cst.Budget.MaxTurns, err)
	}
}

// TestSubAgentCancelOnDevServer: the parent is cancelled while its child's
// model call streams: both end Cancelled, and the child's model call is
// cancelled (the cancel of its activity is in the child's history).
func TestSubAgentCancelOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	turns := []llm.Turn{{Delay: "60s", Text: "a long answer that streams for a minute"}}
	env := f.env(subAgentFixture(t, t.TempDir(), turns, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-agent-cancel"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--stream", "plan it"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	testenv.WaitFor(t, time.Minute, "the child's model call to run", func() bool {
		desc, err := srv.Describe(t, child)
		if err != nil {
			return false
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityId() == "llm/1" && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "cancel", run); !strings.Contains(out, "run "+run+": Cancelled") {
		t.Fatalf("reconcile cancel: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "Cancelled", time.Minute)
	waitStatus(t, srv, child, "Cancelled", time.Minute)
	for _, id := range []string{run, child} {
		desc, err := srv.Describe(t, id)
		if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
			t.Fatalf("%s: workflow status %v (%v), want Canceled", id, desc.GetWorkflowExecutionInfo().GetStatus(), err)
		}
	}
	it := srv.Client.GetWorkflowHistory(t.Context(), child, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	cancelled := false
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		cancelled = cancelled || e.GetActivityTaskCancelRequestedEventAttributes() != nil || e.GetActivityTaskCanceledEventAttributes() != nil
	}
	if !cancelled {
		t.Fatal("the child's history has no cancelled activity: its model call was not cancelled")
	}
}

// TestSubAgentFailsOnDevServer: a child run that fails (its model asks for
// more tool calls in one reply than a run takes) gives the calling model an
// error result naming the agent, the child's run id and why; the parent
// goes on and completes with it.
func TestSubAgentFailsOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	flood := llm.Turn{}
	for range agent.MaxCallsPerReply + 1 {
		flood.ToolCalls = append(flood.ToolCalls, llm.ScriptedCall{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)})
	}
	env := f.env(subAgentFixture(t, t.TempDir(), []llm.Turn{flood}, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-agent-fails"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	code, out := testenv.Run(t, env, 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", "plan it")
	want := "The filer failed: the agent filer (run " + child + ") failed: "
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "asked for 129 tool calls in one reply") {
		t.Fatalf("starter --wait: exit %d, want the answer to contain %q\n%s", code, want, out)
	}
	if cst, err := state(t, srv, child); err != nil || cst.Status != agent.StatusFailed {
		t.Fatalf("child: %+v (%v), want Failed", cst, err)
	}
	if n := modelCalls(t, srv, run); n != 2 {
		t.Fatalf("parent model calls %d, want 2", n)
	}
}
