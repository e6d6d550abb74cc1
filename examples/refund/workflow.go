package refund

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// TaskQueue is the task queue of the example's worker.
const TaskQueue = "refund-example"

// AgentName is the agent SupportWorkflow runs.
const AgentName = "refunds"

// System is the refunds agent's system prompt.
const System = "You are the refunds desk of a web shop. Look an order up before you refund it; " +
	"refund at most what the customer paid, and answer with the refund id."

// SupportWorkflow is the team's workflow: it asks the refunds agent to
// handle request in a child workflow, the agent run (its id is
// AgentRunID of this workflow's), and returns the agent's answer.
func SupportWorkflow(ctx workflow.Context, request string) (string, error) {
	info := workflow.GetInfo(ctx)
	ctx = workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: AgentRunID(info.WorkflowExecution.ID),
		TaskQueue:  info.TaskQueueName,
	})
	var res workflows.Result
	err := workflow.ExecuteChildWorkflow(ctx, agentrun.WorkflowName,
		workflows.Input{Messages: agent.UserMessages(request), Agent: AgentName}).Get(ctx, &res)
	if err != nil {
		return "", fmt.Errorf("agent run: %w", err)
	}
	return res.Answer, nil
}

// AgentRunID is the workflow id of the agent run that SupportWorkflow
// parentID starts: where to query its state and send its approval.
func AgentRunID(parentID string) string { return parentID + "-agent" }

// Options are what Worker needs besides the client.
type Options struct {
	// Payments is the payments service the tools act on. Required.
	Payments *Payments
	// Journal is a folder the worker keeps the write guard's journal and
	// the runs' content in (agentrun.Config.Journal). Required.
	Journal string
	// Model is the refunds agent's model. Default: the scripted model
	// playing Script.
	Model agentrun.Model
	// Logger gets agentrun's lines. Default slog.Default().
	Logger *slog.Logger
}

// Worker returns a worker of taskQueue (not started) that runs
// SupportWorkflow and agentrun with the refunds agent.
func Worker(c client.Client, taskQueue string, opts Options) (worker.Worker, error) {
	if opts.Payments == nil {
		return nil, errors.New("refund.Options: Payments is nil")
	}
	if opts.Model == nil {
		opts.Model = llm.NewScripted(Script())
	}
	ts, err := Tools(opts.Payments)
	if err != nil {
		return nil, err
	}
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(SupportWorkflow)
	err = agentrun.Register(w, agentrun.Config{
		Agents:  []agentrun.Agent{{Name: AgentName, Model: opts.Model, System: System, Tools: ts}},
		Journal: opts.Journal,
		Logger:  opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// pollEvery is how often AwaitApproval queries the run's state: often
// enough for a person watching, seldom enough for the server.
const pollEvery = 200 * time.Millisecond

// AwaitApproval queries the state of agent run runID until it awaits
// approval and returns the call that waits, or an error when the run
// ended first or ctx ended. progress, when not nil, gets each state that
// differs in status from the one before.
func AwaitApproval(ctx context.Context, c client.Client, runID string, progress func(workflows.State)) (agent.Pending, error) {
	var last agent.Status
	var lastErr error
	for {
		var st workflows.State
		v, err := c.QueryWorkflow(ctx, runID, "", workflows.QueryState)
		if err == nil {
			err = v.Get(&st)
		}
		switch {
		case err != nil:
			lastErr = err // not started yet, or no worker has it yet
		case st.Status != last:
			last = st.Status
			if progress != nil {
				progress(st)
			}
		}
		switch {
		case err == nil && st.Status == agent.StatusAwaitingApproval && len(st.Pending) > 0:
			return st.Pending[0], nil
		case err == nil && st.Status.Terminal():
			return agent.Pending{}, fmt.Errorf("run %s ended %s before it awaited approval: %s", runID, st.Status, st.Reason)
		}
		select {
		case <-ctx.Done():
			return agent.Pending{}, fmt.Errorf("run %s: no approval awaited (last status %q, last error %v): %w", runID, last, lastErr, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}
