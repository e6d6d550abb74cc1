package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

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
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	var u agent.Usage
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[e.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == "CallModel" {
			var raw json.RawMessage
			if err := dc.FromPayloads(a.GetResult(), &raw); err != nil {
				t.Fatal(err)
			}
			reply, err := agent.DecodeModelReply(raw)
			if err != nil {
				t.Fatal(err)
			}
			u = u.Add(reply.Usage)
		}
	}
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

	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, childMarker); code != 0 {
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
