package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// The actions section's baselines: bare workflows that make the same
// calls as AgentRun's runs, on one worker.

// The bare session: a workflow that runs as many no-op activities as an
// AgentRun session, takes a message update before each turn after the
// first, and whose turn's activity signals it as often as the streamed
// session's model step published.
const (
	bareSessionName   = "BareSession"
	barePublishName   = "BarePublish"
	barePublishSignal = "publish"
	bareDelegateName  = "BareDelegate"
)

// bareSessionInput says what the bare session does.
type bareSessionInput struct {
	// Before is how many no-op activities run before the first turn (an
	// AgentRun session's ListTools).
	Before int
	// Signals is, per turn, how many signals the turn's activity sends
	// its run.
	Signals []int
}

func bareSession(ctx workflow.Context, in bareSessionInput) error {
	messages := 0
	if err := workflow.SetUpdateHandler(ctx, operator.SignalMessage, func(workflow.Context, any) error {
		messages++
		return nil
	}); err != nil {
		return err
	}
	if err := bareChain(ctx, in.Before); err != nil {
		return err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: workflows.StepTimeout})
	publish := workflow.GetSignalChannel(ctx, barePublishSignal)
	for turn, k := range in.Signals {
		if err := workflow.Await(ctx, func() bool { return messages >= turn }); err != nil {
			return err
		}
		if err := workflow.ExecuteActivity(ctx, barePublishName, k).Get(ctx, nil); err != nil {
			return err
		}
		for range k {
			publish.Receive(ctx, nil)
		}
	}
	return nil
}

// barePublisher is the bare session's activity: it signals its own run k
// times, as a streamed model step publishes its batches.
type barePublisher struct{ c client.Client }

func (p barePublisher) publish(ctx context.Context, k int) error {
	info := activity.GetInfo(ctx)
	for i := range k {
		if err := p.c.SignalWorkflow(ctx, info.WorkflowExecution.ID, "", barePublishSignal, i); err != nil {
			return err
		}
	}
	return nil
}

// bareDelegate is a bare parent: parent no-op activities, then one child
// bare chain of child activities.
func bareDelegate(ctx workflow.Context, parent, child int) error {
	if err := bareChain(ctx, parent); err != nil {
		return err
	}
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID + "-child"})
	return workflow.ExecuteChildWorkflow(ctx, bareWorkflowName, child).Get(ctx, nil)
}

// newActionsBareWorker is the bare side's worker: every bare workflow of
// the section on one queue.
func newActionsBareWorker(c client.Client, queue string) worker.Worker {
	w := newBareWorker(c, queue)
	w.RegisterWorkflowWithOptions(bareSession, workflow.RegisterOptions{Name: bareSessionName})
	w.RegisterActivityWithOptions(barePublisher{c}.publish, activity.RegisterOptions{Name: barePublishName})
	w.RegisterWorkflowWithOptions(bareDelegate, workflow.RegisterOptions{Name: bareDelegateName})
	w.RegisterWorkflowWithOptions(bareApproval, workflow.RegisterOptions{Name: bareApprovalName})
	return w
}

// bareSessionRun starts the bare session id, sends it a message update
// before each turn after the first, and counts its actions once it
// completed.
func bareSessionRun(ctx context.Context, driver client.Client, runBare bareRunner, id string, in bareSessionInput) (actions, error) {
	done := make(chan error, 1)
	var a actions
	go func() {
		var err error
		a, err = runBare(id, "", bareSessionName, in)
		done <- err
	}()
	for turn := 1; turn < len(in.Signals); turn++ {
		var err error
		for try := 0; try < 100; try++ { // the run may not have started yet
			var u client.WorkflowUpdateHandle
			u, err = driver.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: operator.SignalMessage,
				UpdateID: fmt.Sprintf("message-%d", turn+1), Args: []any{operator.MessagePayload("next")}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = u.Get(ctx, nil)
			}
			if err == nil || !strings.Contains(err.Error(), "not found") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", id, turn+1, err)
		}
	}
	err := <-done
	return a, err
}
