package agentrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// Types a [Client] returns, from the packages that define them.
type (
	// Status is a run's status: Running, AwaitingApproval,
	// Indeterminate, BudgetExceeded, Idle, Completed, Failed or Cancelled.
	Status = agent.Status
	// State is where a run stands, as its state query answers: its
	// status, the calls pending, the indeterminate step, the steps it
	// completed, its budget and usage, the inputs it refused.
	State = workflows.State
	// Budget is a run's limits on model calls, tokens and cost.
	Budget = agent.Budget
	// Usage is what a run's model calls used: tokens and cost.
	Usage = agent.Usage
	// Message is one message of a conversation.
	Message = agent.Message
)

// The statuses of a run (agent's).
const (
	StatusRunning          = agent.StatusRunning
	StatusAwaitingApproval = agent.StatusAwaitingApproval
	StatusIndeterminate    = agent.StatusIndeterminate
	StatusBudgetExceeded   = agent.StatusBudgetExceeded
	StatusIdle             = agent.StatusIdle
	StatusCompleted        = agent.StatusCompleted
	StatusFailed           = agent.StatusFailed
	StatusCancelled        = agent.StatusCancelled
)

// DefaultTaskQueue is the task queue of agentrun's workers unless
// configured otherwise.
const DefaultTaskQueue = "agentrun"

// ClientOptions configure a [Client]. The zero value is ready to use.
type ClientOptions struct {
	// TaskQueue is the task queue the workers poll: the one runs start
	// on, and the one named when no worker answers. Default
	// DefaultTaskQueue.
	TaskQueue string
	// Content is the workers' content store, where they keep values above
	// 1 KiB (a tool call's long arguments) by reference: Config.Content,
	// or the folder content in Config.Journal (content.NewFileStore).
	// Default nil: [PendingCall.Args] of such a call returns an error
	// saying so.
	Content content.Store
	// DataConverter decodes the runs' histories for Client.Drift: the
	// converter of the Temporal client (package codec's, when the workers
	// encrypt payloads). Default converter.GetDefaultDataConverter().
	DataConverter converter.DataConverter
	// UpdateWait bounds how long an operator input waits for the run to
	// admit and answer it before the client looks why it did not (see
	// [NotAnsweredError]). Default 10s.
	UpdateWait time.Duration
}

// Client starts and drives agent runs on Temporal, over the caller's own
// Temporal client: it dials nothing and closes nothing. It is safe for
// concurrent use.
type Client struct {
	c    client.Client
	opts ClientOptions
}

// NewClient returns a Client over c, which must be connected to the
// namespace of agentrun's workers (with their data converter, when they
// encrypt payloads).
func NewClient(c client.Client, opts ClientOptions) (*Client, error) {
	if c == nil {
		return nil, errors.New("agentrun client: the Temporal client is nil; want one from client.Dial")
	}
	if opts.UpdateWait < 0 {
		return nil, fmt.Errorf("agentrun client: UpdateWait %s is negative; want a positive duration, or 0 for 10s", opts.UpdateWait)
	}
	opts.TaskQueue = cmp.Or(opts.TaskQueue, DefaultTaskQueue)
	opts.UpdateWait = cmp.Or(opts.UpdateWait, 10*time.Second)
	return &Client{c: c, opts: opts}, nil
}

// StartOptions describe a run to start (see [Client.Start]).
type StartOptions struct {
	// ID is the run id, the Temporal workflow id: letters, digits, '_',
	// '.', '-', starting with a letter or digit, at most 128 characters.
	// Required.
	ID string
	// Prompt is the user's request. Either Prompt or Messages is
	// required.
	Prompt string
	// Messages is the conversation the run starts from, when it is more
	// than one user message.
	Messages []Message
	// Agent names the agent the run runs: one of the agents the workers
	// were registered with (Config.Agents). Default "": the workers'
	// first agent. A name the workers do not have fails the run at its
	// tool listing, naming the agents they have.
	Agent string
	// MaxTurns bounds the model calls. Default 0: agent.DefaultMaxTurns
	// (25). At the limit the run waits as BudgetExceeded until
	// [Run.Budget] raises it.
	MaxTurns int
	// MaxTokens bounds the tokens (input plus output) of the model calls.
	// Default 0: no limit.
	MaxTokens int64
	// MaxCost bounds the cost of the model calls in US dollars, at the
	// prices of the workers' models file. Default 0: no limit.
	MaxCost float64
	// Session keeps the run open after each answer: it waits Idle for a
	// [Run.Message], and completes with its last answer once SessionIdle
	// passes with none. Default false: the run completes with its answer.
	Session bool
	// SessionIdle is how long a session waits for a message. Default 0:
	// 24 hours. Only with Session.
	SessionIdle time.Duration
	// Stream says whether model steps stream their text to the run's
	// stream. Default nil: for sessions only.
	Stream *bool
}

// input checks o and returns the run's input, or one line naming what is
// wrong and what is valid.
func (o StartOptions) input() (workflows.Input, error) {
	in := workflows.Input{Messages: o.Messages, Agent: o.Agent, MaxTurns: o.MaxTurns, MaxTokens: o.MaxTokens, MaxCost: o.MaxCost, Session: o.Session, Stream: o.Stream}
	if err := operator.ValidRunID(o.ID); err != nil {
		return in, fmt.Errorf("start: %w", err)
	}
	switch prompt := strings.TrimSpace(o.Prompt) != ""; {
	case prompt && len(o.Messages) > 0:
		return in, fmt.Errorf("start run %s: both Prompt and Messages are set; want one of them", o.ID)
	case prompt:
		in.Messages = agent.UserMessages(o.Prompt)
	case len(o.Messages) == 0:
		return in, fmt.Errorf("start run %s: no Prompt and no Messages; want the user's request in Prompt", o.ID)
	}
	switch {
	case o.Agent != "" && !agent.ValidToolName(o.Agent):
		return in, fmt.Errorf("start run %s: Agent %q is not 1 to 64 letters, digits, '_' or '-'; want the name of one of the workers' agents, or \"\" for the first", o.ID, o.Agent)
	case o.MaxTurns < 0 || o.MaxTurns > math.MaxInt32:
		return in, fmt.Errorf("start run %s: MaxTurns %d; want a positive number of model calls, or 0 for the default", o.ID, o.MaxTurns)
	case o.MaxTokens < 0:
		return in, fmt.Errorf("start run %s: MaxTokens %d; want a positive number of tokens, or 0 for no limit", o.ID, o.MaxTokens)
	case o.MaxCost < 0 || math.IsNaN(o.MaxCost) || math.IsInf(o.MaxCost, 0):
		return in, fmt.Errorf("start run %s: MaxCost %v; want a positive number of US dollars, or 0 for no limit", o.ID, o.MaxCost)
	case o.SessionIdle < 0 || (o.SessionIdle > 0 && !o.Session):
		return in, fmt.Errorf("start run %s: SessionIdle %s; want a positive duration with Session, or 0", o.ID, o.SessionIdle)
	}
	if o.Session {
		in.SessionIdle = cmp.Or(o.SessionIdle, workflows.DefaultSessionIdle).String()
	}
	return in, nil
}

// ErrRunExists: [Client.Start] was given the id of a run that exists (or
// existed: a run id is used once).
var ErrRunExists = errors.New("run exists")

// Start starts a run and returns it. A run id is used once: Start returns
// an error matching ErrRunExists when a run had that id, and [Client.Run]
// reaches it.
func (c *Client) Start(ctx context.Context, opts StartOptions) (*Run, error) {
	in, err := opts.input()
	if err != nil {
		return nil, err
	}
	summary := opts.Prompt
	if summary == "" {
		summary = in.Messages[len(in.Messages)-1].Content
	}
	err = c.startRun(ctx, opts.ID, summary, "", in, map[string]any{workflows.MemoInputHash: workflows.InputHash(in.Messages)})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil, fmt.Errorf("start run %s: %w; choose another id, or reach it with Client.Run", opts.ID, ErrRunExists)
	}
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", opts.ID, err)
	}
	return c.Run(opts.ID), nil
}

// startRun starts the workflow of the run id with input in, shown with
// summary and, for a fork, its origin (AgentRunForkOf): the one way this
// client starts a run. A run id is used once: a closed run's id is refused
// as an open one's is (serviceerror.WorkflowExecutionAlreadyStarted).
func (c *Client) startRun(ctx context.Context, id, summary, origin string, in workflows.Input, memo map[string]any) error {
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                c.opts.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            workflows.Summary(summary),
		StaticDetails:                            workflows.StaticDetails(id),
		Memo:                                     memo,
		TypedSearchAttributes:                    workflows.StartAttributes(origin),
	}, workflows.WorkflowName, in)
	return err
}

// Run is a handle on the run runID, started by anyone. It checks nothing:
// a run that does not exist is ErrRunNotFound when the handle is used.
func (c *Client) Run(runID string) *Run { return &Run{c: c, id: runID} }

// Run is a handle on one agent run (see [Client.Run]).
type Run struct {
	c  *Client
	id string
}

// ID is the run id.
func (r *Run) ID() string { return r.id }

// Result is how a run ended.
type Result struct {
	// Status is Completed, Failed or Cancelled; on the local engine,
	// [Local.Start] and [LocalRun.Resume] also return a run that waits for
	// a person: AwaitingApproval, Indeterminate, BudgetExceeded or Idle,
	// with Reason.
	Status Status
	// Answer is the model's final answer (Completed).
	Answer string
	// Reason says why a run Failed, was Cancelled, or waits.
	Reason string
	// CutOff is set when the model's length limit cut the answer off;
	// Empty when the model answered nothing.
	CutOff, Empty bool
	// Usage is what the run's model calls used; Steps counts its steps.
	Usage Usage
	Steps int
}

// Wait waits until the run ends and returns how. A run that Failed or
// was Cancelled is no error: Status and Reason say so. The error is
// ErrRunNotFound for an unknown run, or the one that kept Wait from
// reading the end (ctx's, the connection's).
func (r *Run) Wait(ctx context.Context) (Result, error) {
	if err := operator.ValidRunID(r.id); err != nil {
		return Result{}, err
	}
	var res workflows.Result
	err := r.c.c.GetWorkflow(ctx, r.id, "").Get(ctx, &res)
	var wfErr *temporal.WorkflowExecutionError
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		return Result{Status: agent.StatusCompleted, Answer: res.Answer, CutOff: res.CutOff, Empty: res.Empty, Usage: res.Usage, Steps: res.Steps}, nil
	case errors.As(err, &canceled):
		out := Result{Status: agent.StatusCancelled, Reason: agent.CancelledReason("")}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if st, err := r.State(qctx); err == nil && st.Status == agent.StatusCancelled {
			out.Reason, out.Usage = st.Reason, st.Usage
		}
		return out, nil
	case errors.As(err, &wfErr):
		return Result{Status: agent.StatusFailed, Reason: failureMessage(err)}, nil
	}
	return Result{}, r.c.wrap("wait for", r.id, err)
}

// failureMessage is the message a run or an update failed with: the
// application error's own message, without the Temporal client's
// wrapping.
func failureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// State returns where the run stands, from its state query: a worker
// answers it, so it waits for one (bound it with ctx).
func (r *Run) State(ctx context.Context) (State, error) {
	var st State
	if err := operator.ValidRunID(r.id); err != nil {
		return st, err
	}
	v, err := r.c.c.QueryWorkflow(ctx, r.id, "", workflows.QueryState)
	if err != nil {
		return st, r.c.wrap("query", r.id, err)
	}
	return st, v.Get(&st)
}

// Cancel asks the run to end as Cancelled (Temporal's own cancellation)
// and returns; [Run.Wait] sees it end. A running model call or read stops;
// a write that was running is named in the Reason, as it may have taken
// effect. A run that ended is an [*EndedError].
func (r *Run) Cancel(ctx context.Context) error {
	if _, err := r.admit(ctx); err != nil {
		return err
	}
	return r.c.wrap("cancel", r.id, r.c.c.CancelWorkflow(ctx, r.id, ""))
}

// admit refuses an input for a run that is unknown or ended, and returns
// the run id of the run's first execution, which approvals are pinned to.
func (r *Run) admit(ctx context.Context) (string, error) {
	if err := operator.ValidRunID(r.id); err != nil {
		return "", err
	}
	d, err := r.c.c.DescribeWorkflow(ctx, r.id, "")
	if err != nil {
		return "", r.c.wrap("describe", r.id, err)
	}
	info := d.RawResponse.GetWorkflowExecutionInfo()
	if status, ended := workflows.EndedStatus(info.GetStatus()); ended {
		return "", &EndedError{RunID: r.id, Status: status}
	}
	return info.GetFirstRunId(), nil
}

// wrap names what failed: ErrRunNotFound for a run the server does not
// know, otherwise err with what was done to which run.
func (c *Client) wrap(what, runID string, err error) error {
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("run %s not found: %w", runID, ErrRunNotFound)
	}
	return fmt.Errorf("%s run %s: %w", what, runID, err)
}
