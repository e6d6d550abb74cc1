package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// The two sides of the approval sections: the hand-example runs on
// AgentRun, with their write tool, and the bare workflows that stand
// for them.

// bareApprovalName is the baseline of the approval section: a workflow
// that says it awaits approval, as AgentRun does, waits for one approve
// signal and then runs n no-op activities one after another; with upserts
// it also says Running at the approval and Completed at its end, as an
// approved AgentRun run does.
const bareApprovalName = "BareApproval"

func bareApproval(ctx workflow.Context, n int, upserts bool) error {
	if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.StatusKey.ValueSet(string(agent.StatusAwaitingApproval))); err != nil {
		return err
	}
	var payload map[string]any
	workflow.GetSignalChannel(ctx, operator.SignalApprove).Receive(ctx, &payload)
	if upserts {
		if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.StatusKey.ValueSet(string(agent.StatusRunning))); err != nil {
			return err
		}
	}
	if err := bareChain(ctx, n); err != nil || !upserts {
		return err
	}
	return workflow.UpsertTypedSearchAttributes(ctx, workflows.StatusKey.ValueSet(string(agent.StatusCompleted)))
}

// newBareApprovalWorker is the bare side's worker: the options
// newAgentWorker gives AgentRun's (worker.Options{}).
func newBareApprovalWorker(c client.Client, queue string) worker.Worker {
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(bareApproval, workflow.RegisterOptions{Name: bareApprovalName})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: bareActivityName})
	return w
}

// handInput is the hand example's prompt.
var handInput = workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: "I need read access to the orders database."}}}

// approvalScript is the hand example (llm.HandExample) with its write,
// create_ticket, replaced by fileRequest: look the policy up, file the
// request (a write, which waits for approval), answer with its id. The
// demo's create_ticket reads and decodes every ticket filed so far under
// one file lock, and fsyncs, for each ticket: thousands of runs would
// measure that tool, not AgentRun; the bare side's activities are no-ops.
func approvalScript() llm.Script {
	s := llm.HandExample()
	s.Turns[1].ToolCalls = []llm.ScriptedCall{{Name: fileRequestName, Args: json.RawMessage(`{"title":"Read access to the orders database"}`)}}
	return s
}

const fileRequestName = "file_request"

// fileRequest is the approval section's write tool: it files nothing and
// returns a new id.
type fileRequest struct{ n *atomic.Int64 }

func (fileRequest) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: fileRequestName, Description: "Files an access request. Returns its id.", Kind: agent.KindWrite,
		Schema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)}
}

func (f fileRequest) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	return agent.ToolResult{Content: fmt.Sprintf("REQ-%d", f.n.Add(1))}, nil
}

// newApprovalWorker is the AgentRun side's worker of the approval section.
func newApprovalWorker(c client.Client, env *benchEnv, queue, dir string) (worker.Worker, func() error, error) {
	return newAgentWorker(c, queue, approvalScript(), env.subdir(dir), nil, env.logger, agentOptions{}, fileRequest{new(atomic.Int64)})
}
