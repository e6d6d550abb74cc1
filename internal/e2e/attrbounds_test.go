package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// escapedTool is a gated write whose name the server counts six times
// over: encoding/json writes each '&' as \u0026.
type escapedTool struct{ calls *atomic.Int32 }

// escapedName is 345 bytes, 2,047 as JSON: three markers joined fit
// workflows.MaxStepAttr (1,064 bytes) but are 6,166 bytes as the server
// counts them.
var escapedName = "file_" + strings.Repeat("&", 340)

func (escapedTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: escapedName, Description: "Files something.", Kind: agent.KindWrite, Approval: agent.ApprovalAlways,
		Schema: json.RawMessage(`{"type":"object"}`)}
}

func (e escapedTool) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	return agent.ToolResult{Content: fmt.Sprintf("FILED-%d", e.calls.Add(1))}, nil
}

// TestOversizedStepAttrIsCut: on a real dev server, a run parks on three
// calls of a tool whose markers together are 6 KB as the server measures
// them (over its 2 KiB limit per search attribute value, which gets a run
// terminated). The run stays up with AgentRunStep cut to at most
// workflows.MaxAttrValue and ending in "…+N bytes"; approved, the three
// calls run and the run completes.
func TestOversizedStepAttrIsCut(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	queue := "q-" + t.Name()
	var calls atomic.Int32
	set, err := tools.NewSet(escapedTool{&calls})
	if err != nil {
		t.Fatal(err)
	}
	call := llm.ScriptedCall{Name: escapedName, Args: json.RawMessage(`{}`)}
	script := llm.Script{Turns: []llm.Turn{{ToolCalls: []llm.ScriptedCall{call, call, call}}, {Text: "Filed " + llm.LastToolResult + "."}}}
	w := worker.New(srv.Client, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	w.RegisterActivity(&activities.Activities{
		Exec:     &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: content.NewMemStore()},
		Guard:    &journal.Guard{Store: journal.NewMemStore()},
		NoStream: true,
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const run = "e2e-oversized-step"
	if _, err := srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: run, TaskQueue: queue}, workflows.WorkflowName,
		workflows.Input{Messages: agent.UserMessages("file three things")}); err != nil {
		t.Fatal(err)
	}
	step := stepAttr(t, srv, run)
	b, _ := json.Marshal(step)
	if len(b) > workflows.MaxAttrValue || !strings.HasPrefix(step, "tool/1/0/file_&&&") || !strings.HasSuffix(step, " bytes") || !strings.Contains(step, "…+") {
		t.Fatalf("AgentRunStep %q (%d bytes as JSON); want the markers cut to at most %d, ending in …+N bytes", step, len(b), workflows.MaxAttrValue)
	}
	// One at a time: once an approved call runs, the others wait again
	// only when it is done.
	var st workflows.State
	for left := 3; left > 0; left-- {
		testenv.WaitFor(t, time.Minute, fmt.Sprintf("%d calls pending", left), func() bool {
			s, err := state(t, srv, run)
			st = s
			return err == nil && s.Status == agent.StatusAwaitingApproval && len(s.Pending) == left
		})
		if err := srv.Client.SignalWorkflow(t.Context(), run, "", operator.SignalApprove, map[string]string{"Marker": st.Pending[0].Marker}); err != nil {
			t.Fatal(err)
		}
	}
	var res workflows.Result
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := srv.Client.GetWorkflow(ctx, run, "").Get(ctx, &res); err != nil {
		st, _ := state(t, srv, run)
		t.Fatalf("the run: %v; state %s, %d pending, rejected %+v", err, st.Status, len(st.Pending), st.Rejected)
	}
	if calls.Load() != 3 || !strings.Contains(res.Answer, "FILED-") {
		t.Fatalf("%d calls, answer %q; want 3 and a FILED- result", calls.Load(), res.Answer)
	}
}

// stepAttr is the run's AgentRunStep as the server holds it, once set; a
// run the server closed (terminated) fails the test.
func stepAttr(t *testing.T, srv *testenv.Server, run string) string {
	t.Helper()
	var step string
	testenv.WaitFor(t, time.Minute, run+"'s AgentRunStep", func() bool {
		desc, err := srv.Describe(t, run)
		if err != nil {
			t.Fatal(err)
		}
		info := desc.GetWorkflowExecutionInfo()
		if s := info.GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the run is %s, want Running", s)
		}
		p := info.GetSearchAttributes().GetIndexedFields()[operator.StepAttribute]
		return p != nil && json.Unmarshal(p.GetData(), &step) == nil && step != ""
	})
	return step
}
