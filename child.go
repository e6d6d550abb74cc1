package agentrun

import (
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/workflows"
)

// RunAgent runs an agent from your own workflow: a run of opts.Agent (""
// for the worker's first) as a child workflow on the calling workflow's
// task queue, and waits for its end. opts.ID defaults to the calling
// workflow's id, "-" and the agent's name ("-agent" for the first); give
// one of your own when a workflow runs the same agent twice.
//
// The run waits for approvals and settles writes like any run: operators
// and [Client] see it by its id. Its end comes back as a [Result]: a run
// that Failed or was Cancelled is no error (Status and Reason say so); the
// error is for options that are wrong (one line) or a child that could
// not start. Cancelling the calling workflow cancels the run.
func RunAgent(ctx workflow.Context, opts StartOptions) (Result, error) {
	if opts.ID == "" {
		name := opts.Agent
		if name == "" {
			name = "agent"
		}
		opts.ID = workflow.GetInfo(ctx).WorkflowExecution.ID + "-" + name
	}
	in, err := opts.input()
	if err != nil {
		return Result{}, err
	}
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            opts.ID,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation:   true,
		StaticSummary:         workflows.Summary(in.Messages[len(in.Messages)-1].Text()),
		StaticDetails:         workflows.StaticDetails(opts.ID),
		TypedSearchAttributes: workflows.StartAttributes(""),
	})
	var res workflows.Result
	err = workflow.ExecuteChildWorkflow(ctx, WorkflowName, in).Get(ctx, &res)
	var canceled *temporal.CanceledError
	var failed *temporal.ChildWorkflowExecutionError
	switch {
	case err == nil:
		return Result{Status: agent.StatusCompleted, Answer: res.Answer, CutOff: res.CutOff, Empty: res.Empty, Usage: res.Usage, Steps: res.Steps}, nil
	case errors.As(err, &canceled):
		return Result{Status: agent.StatusCancelled, Reason: agent.CancelledReason("")}, nil
	case errors.As(err, &failed):
		return Result{Status: agent.StatusFailed, Reason: failureMessage(err)}, nil
	}
	return Result{}, err
}
