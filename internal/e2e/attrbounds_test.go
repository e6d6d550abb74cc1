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

// TestEscapedToolNameRefusedAtListing: on a real dev server, a worker
// whose tool has a name the server would count six times over (three of
// its markers are 6 KB as the server measures them, over its 2 KiB limit
// per search attribute value, which gets a run terminated) never offers
// it: the run fails at its listing with the reason, not terminated, and
// the tool never runs. (The upsert's own bound, for whatever value gets
// past the names' rule, is tested in workflows' TestBoundAttr.)
func TestEscapedToolNameRefusedAtListing(t *testing.T) {
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
	activities.Register(w, &activities.Activities{
		Exec:     &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: content.NewMemStore()},
		Guard:    &journal.Guard{Store: journal.NewMemStore()},
		NoStream: true,
	}, false)

	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const run = "e2e-escaped-tool-name"
	if _, err := srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: run, TaskQueue: queue}, workflows.WorkflowName,
		workflows.Input{Messages: agent.UserMessages("file three things")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = srv.Client.GetWorkflow(ctx, run, "").Get(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "the name is not 1 to 64 letters") {
		t.Fatalf("the run ended with %v; want it failed at its listing, naming the tool name rule", err)
	}
	desc, derr := srv.Describe(t, run)
	if derr != nil {
		t.Fatal(derr)
	}
	if s := desc.GetWorkflowExecutionInfo().GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED || calls.Load() != 0 {
		t.Fatalf("the run is %s after %d calls; want Failed after 0", s, calls.Load())
	}
}
