package wfchange

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/workflows"
)

// Workflow is the workflow function a worker registers under
// workflows.RegisterOptions: workflows.AgentRun itself when change is
// false (the production case), or AgentRun behind a 1 ms timer, a
// different command sequence. It is the same on every replay in that
// worker, as change is fixed when the worker starts.
func Workflow(change bool) func(workflow.Context, workflows.Input) (workflows.Result, error) {
	if !change {
		return workflows.AgentRun
	}
	return func(ctx workflow.Context, in workflows.Input) (workflows.Result, error) {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return workflows.Result{}, err
		}
		return workflows.AgentRun(ctx, in)
	}
}
