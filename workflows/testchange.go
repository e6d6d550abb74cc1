package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Test is a test-only change to AgentRun; production leaves it zero. The
// worker sets it from internal/config's Test section
// (AGENTRUN_TEST_WORKFLOW_CHANGE=1 in the worker process's environment).
type Test struct {
	// WorkflowChange makes every AgentRun execution start with a 1 ms
	// timer before anything else: a different command sequence, so the
	// worker fails with a non-determinism error on the history of a run
	// started without it. The Worker Versioning test runs "build B" with
	// it to prove that runs pinned to build A never reach B. Default
	// false.
	WorkflowChange bool
}

// Workflow is the workflow function a worker registers under
// RegisterOptions: AgentRun itself for the zero Test (the production
// case), or AgentRun behind the change t selects. It is the same on every
// replay in that worker, as t is fixed when the worker starts.
func Workflow(t Test) func(workflow.Context, Input) (Result, error) {
	if !t.WorkflowChange {
		return AgentRun
	}
	return func(ctx workflow.Context, in Input) (Result, error) {
		if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
			return Result{}, err
		}
		return AgentRun(ctx, in)
	}
}
