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
	"github.com/agentrun/agentrun/llm"
)

// TaskQueue is the task queue of the example's worker.
const TaskQueue = "refund-example"

// AgentName is the agent SupportWorkflow runs.
const AgentName = "refunds"

// System is the refunds agent's system prompt.
const System = "You are the refunds desk of a web shop. Look an order up before you refund it; " +
	"refund at most what the customer paid, and answer with the refund id."

// SupportWorkflow is the team's workflow: it runs the refunds agent on
// request with agentrun.RunAgent, as a child workflow on this workflow's
// task queue whose id is AgentRunID of this workflow's, and returns the
// agent's answer. A run that does not complete (Failed, or Cancelled by an
// operator) fails SupportWorkflow with an error naming the run, its status
// and its reason: the team's workflow has no answer to return then.
func SupportWorkflow(ctx workflow.Context, request string) (string, error) {
	res, err := agentrun.RunAgent(ctx, agentrun.StartOptions{Agent: AgentName, Prompt: request})
	if err != nil {
		return "", fmt.Errorf("agent run: %w", err)
	}
	if res.Status != agentrun.StatusCompleted {
		return "", fmt.Errorf("agent run %s ended %s: %s", AgentRunID(workflow.GetInfo(ctx).WorkflowExecution.ID), res.Status, res.Reason)
	}
	return res.Answer, nil
}

// AgentRunID is the workflow id of the agent run that SupportWorkflow
// parentID runs, agentrun.RunAgent's default: parentID, "-" and the
// agent's name. It is the run to reach with agentrun.Client.Run.
func AgentRunID(parentID string) string { return parentID + "-" + AgentName }

// Options are what Worker needs besides the client.
type Options struct {
	// Payments is the payments service the tools act on. Required.
	Payments *Payments
	// Mailer is the mail service of the team's EmailReceipt activity.
	// Default: a new Mailer, with no outbox.
	Mailer *Mailer
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
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(SupportWorkflow)
	w.RegisterActivity(opts.mailer().EmailReceipt) // the team's own activity, the agent's email_receipt
	if err := agentrun.Register(w, cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// Local returns the same refunds agent on agentrun's local engine: in
// this process, with no Temporal server, its runs' journals in
// opts.Journal. Its runs are operated as the worker's are (AwaitApproval,
// then Approve or Deny), and a run's first driver is Local.Start.
func Local(opts Options) (*agentrun.Local, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	return agentrun.NewLocal(cfg)
}

// mailer is opts.Mailer, set to a new Mailer when it is nil: Worker
// registers the activity of the Mailer the tool was made with.
func (opts *Options) mailer() *Mailer {
	if opts.Mailer == nil {
		opts.Mailer = &Mailer{}
	}
	return opts.Mailer
}

// config is the agentrun configuration of the refunds agent, for either
// engine.
func (opts *Options) config() (agentrun.Config, error) {
	if opts.Payments == nil {
		return agentrun.Config{}, errors.New("refund.Options: Payments is nil")
	}
	if opts.Model == nil {
		opts.Model = llm.NewScripted(Script())
	}
	ts, err := Tools(opts.Payments)
	if err != nil {
		return agentrun.Config{}, err
	}
	email, err := EmailTool(opts.mailer())
	if err != nil {
		return agentrun.Config{}, err
	}
	return agentrun.Config{
		Agents:  []agentrun.Agent{{Name: AgentName, Model: opts.Model, System: System, Tools: append(ts, email), Approve: Rule}},
		Journal: opts.Journal,
		Logger:  opts.Logger,
	}, nil
}

// pollEvery is how often AwaitApproval reads the run's state: often
// enough for a person watching, seldom enough for the server.
const pollEvery = 200 * time.Millisecond

// AwaitApproval reads the state of agent run run until it awaits approval
// and returns the call that waits, with its arguments (PendingCall.Args),
// or an error when the run ended first or ctx ended. progress, when not
// nil, gets each state that differs in status from the one before. run is
// a run on either engine: an *agentrun.Run of a Temporal client, or an
// *agentrun.LocalRun of the local engine (Local).
func AwaitApproval(ctx context.Context, run agentrun.Operator, progress func(agentrun.State)) (agentrun.PendingCall, error) {
	var last agentrun.Status
	var lastErr error
	for {
		st, err := run.State(ctx)
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
		case err == nil && st.Status == agentrun.StatusAwaitingApproval:
			calls, err := run.Pending(ctx)
			if err != nil {
				lastErr = err
				break
			}
			for _, call := range calls {
				if !call.Indeterminate {
					return call, nil
				}
			}
		case err == nil && st.Status.Terminal():
			return agentrun.PendingCall{}, fmt.Errorf("run %s ended %s before it awaited approval: %s", run.ID(), st.Status, st.Reason)
		}
		select {
		case <-ctx.Done():
			return agentrun.PendingCall{}, fmt.Errorf("run %s: no approval awaited (last status %q, last error %v): %w", run.ID(), last, lastErr, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}
