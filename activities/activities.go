package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/secret"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/tools"
)

// Error types of the activities' failures; stable strings the workflow and
// retry policies match on.
const (
	// ErrTypeIndeterminate: a write started on an earlier attempt and never
	// recorded its result.
	ErrTypeIndeterminate = "Indeterminate"
	// ErrTypeGuard: the guard journal refused the step (a bad run id).
	ErrTypeGuard = "GuardRefused"
	// ErrTypeContent: a value the step refers to is missing from the
	// content store or damaged there; nothing is guessed.
	ErrTypeContent = "ContentMissing"
	// ErrTypeFenced: an earlier attempt of the write may still be running;
	// this attempt probed nothing and ran nothing. Its details hold the
	// earlier attempt (fence.Attempt): the workflow waits until its
	// deadline plus fence.Grace, then runs the step again.
	ErrTypeFenced = "AttemptRunning"
	// ErrTypeFenceLost: the attempt no longer held its write when the tool
	// would have run (its deadline passed, or a later attempt took the
	// step); the tool did not run in it.
	ErrTypeFenceLost = "FenceLost"
)

// A write's activity runs its tool under the tool's timeout, and before it
// the guard's records and maybe a probe: its start-to-close is the tool's
// timeout plus WriteSlack, at most MaxWriteStartToClose. The attempt's
// deadline (fence.Attempt) is its start plus the tool's timeout: a later
// attempt waits that long, plus fence.Grace, before it settles an
// interrupted write.
const (
	WriteSlack           = time.Minute
	MaxWriteStartToClose = time.Hour
)

// WriteStartToClose is the start-to-close timeout of a write whose tool has
// timeout t.
func WriteStartToClose(t time.Duration) time.Duration {
	return min(t+WriteSlack, MaxWriteStartToClose)
}

// CheckWriteTimeouts refuses, at worker start-up, a write tool whose
// timeout leaves its activity no room for the guard's work and the fence's
// grace: one line naming the tool and both values.
func CheckWriteTimeouts(set *tools.Set) error {
	for _, spec := range set.Specs() {
		if spec.Kind != agent.KindWrite || spec.Idempotent {
			continue
		}
		t := set.Timeout(spec.Name)
		if t+WriteSlack > MaxWriteStartToClose {
			return fmt.Errorf("tool %s: its timeout %s leaves no room in its write activity's start-to-close %s for the guard's records and the fence's %s grace; want a timeout of at most %s", spec.Name, t, WriteStartToClose(t), fence.Grace, MaxWriteStartToClose-WriteSlack)
		}
	}
	return nil
}

// NonRetryableModelErrors are the model error types Temporal must not retry.
var NonRetryableModelErrors = []string{
	string(llm.ClassBadRequest), string(llm.ClassAuth), string(llm.ClassNotFound), string(llm.ClassContextLength),
}

// Catalog is what a run records once at its start: the model's name (for
// step summaries), the tools offered to the model as the policy sees them
// (names, kinds, approval; descriptions and schemas are in the content
// store under ToolsKey, which model steps refer to).
type Catalog struct {
	Model    string           `json:"model"`
	Tools    []agent.ToolSpec `json:"tools"`
	ToolsKey string           `json:"tools_key,omitempty"`
	// Timeouts holds each tool's timeout, so that a step's activity
	// outlives the call it makes.
	Timeouts map[string]time.Duration `json:"timeouts,omitempty"`
	// ModelTimeout is the model's request timeout, so that a model step's
	// activity outlives the request; 0 in runs recorded before it was.
	ModelTimeout time.Duration `json:"model_timeout,omitempty"`
	// FailOnCut makes a final answer cut off by the model's length limit
	// fail the run (AGENTRUN_FAIL_ON_CUT_ANSWER on the worker that listed
	// the tools); recorded once, so every worker decides alike.
	FailOnCut bool `json:"fail_on_cut,omitempty"`
	// FailOnEmpty makes a final answer with no text fail the run
	// (AGENTRUN_FAIL_ON_EMPTY_ANSWER on the worker that listed the tools);
	// recorded once, like FailOnCut. False in runs recorded before it was.
	FailOnEmpty bool `json:"fail_on_empty,omitempty"`
}

// StepInput is the input of CallModel and CallTool.
type StepInput struct {
	Step agent.Step `json:"step"`
	// Generation counts the executions of a write step: 1, then one more
	// for each reconcile retry.
	Generation int `json:"generation,omitempty"`
	// RunKey names the run in the guard journal: the workflow's first run
	// id, so that a later run under the same workflow id starts afresh.
	RunKey string `json:"run_key,omitempty"`
	// Stream asks a model step to publish its text to the run's stream
	// while the model writes it (when the provider streams).
	Stream bool `json:"stream,omitempty"`
}

// Activities are the activities of AgentRun, with their dependencies.
type Activities struct {
	Exec *execute.Executor
	// Guard is the journal that makes writes Indeterminate instead of
	// running them twice; its store must be shared by every worker of the
	// task queue.
	Guard *journal.Guard
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// HeartbeatEvery is how often a running step heartbeats. Default 1s.
	HeartbeatEvery time.Duration
	// Metrics records steps, their latency, tokens and approvals. Nil
	// records nothing.
	Metrics *metrics.Recorder
	// StreamEvery is how often a streaming model step sends the text it
	// got to the run's stream (one signal each time). Default 0:
	// streams.DefaultBatchInterval, 1 s.
	StreamEvery time.Duration
	// NoStream keeps model text off the run's stream, whatever the run
	// asks: the text is in the run's history once streamed, as signals
	// (AGENTRUN_STREAM=off). Default false: runs that ask stream.
	NoStream bool
	// Identity names this worker in a write's fence (fence.Attempt), so
	// that people see which worker may still be running it. Default:
	// pid@host, as the sdk names a worker.
	Identity string
	// SignalRun sends a step's retry notice to its run (retry.go).
	// Default nil: the activity's client signals the run. The sdk's test
	// environment has no server to signal, so its tests set it.
	SignalRun func(ctx context.Context, n RetryNotice) error
	// Tracer, when not nil, records a span per step attempt with the
	// GenAI conventions' attributes (trace.go, package plumbing/tracing).
	// Default nil: tracing off, no span.
	Tracer trace.Tracer
	// Capture puts prompt, completion and tool text on those spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; never with the
	// payload codec). Default false.
	Capture bool
	// Test are the test-only crash points (hold.go). Production leaves
	// them zero.
	Test Test
}

// ListTools returns the model's name and the tools on offer, and keeps
// their full specs in the content store. It heartbeats like the steps, so
// that a worker that dies holding it is noticed within the heartbeat
// timeout.
func (a *Activities) ListTools(ctx context.Context) (Catalog, error) {
	var c Catalog
	_, err := a.heartbeating(ctx, "tools", func(ctx context.Context) (json.RawMessage, error) {
		if err := a.holdInList(ctx); err != nil { // a test-only crash point; inert unless set
			return nil, err
		}
		var err error
		c, err = a.listTools(ctx)
		return nil, err
	})
	return c, err
}

func (a *Activities) listTools(ctx context.Context) (Catalog, error) {
	key, err := a.Exec.PutTools(ctx)
	if err != nil {
		return Catalog{}, fmt.Errorf("keep the tool specs: %w", err)
	}
	c := Catalog{Model: a.Exec.Model.Name(), ToolsKey: key, Timeouts: map[string]time.Duration{},
		ModelTimeout: cmp.Or(a.Exec.ModelTimeout, llm.DefaultTimeout), FailOnCut: a.Exec.FailOnCut, FailOnEmpty: a.Exec.FailOnEmpty}
	for _, t := range a.Exec.Tools.Specs() {
		t.Description, t.Schema = "", nil
		c.Tools = append(c.Tools, t)
		c.Timeouts[t.Name] = a.Exec.Tools.Timeout(t.Name)
	}
	return c, nil
}

// CallModel runs one model step. Provider failures become application
// errors whose type is the llm error class; rate limits carry the
// provider's Retry-After as the next retry delay.
func (a *Activities) CallModel(ctx context.Context, in StepInput) (json.RawMessage, error) {
	if in.Step.Kind != agent.KindModel || in.Step.Model == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s is not a model step", in.Step.Name), "BadStep", nil)
	}
	if err := a.checkModel(in.Step); err != nil {
		return nil, err
	}
	if a.Metrics != nil && activity.GetInfo(ctx).Attempt == 1 {
		for range denials(in.Step.Model.New) {
			a.Metrics.Decision(ctx, metrics.Deny)
		}
	}
	a.retryStarted(ctx, in.Step.Name)
	ctx, span := a.startChat(ctx, in)
	start := time.Now()
	res, err := a.heartbeating(ctx, in.Step.Name, func(ctx context.Context) (json.RawMessage, error) {
		if in.Stream {
			return a.streamModel(ctx, in.Step)
		}
		return a.Exec.Execute(ctx, in.Step)
	})
	if err != nil {
		defer func() { a.endChat(span, nil, err) }()
		a.Metrics.Step(ctx, agent.KindModel, metrics.Failed, time.Since(start))
		err = modelError(ctx, err)
		a.retryFailed(ctx, in.Step.Name, err)
		return nil, err
	}
	a.Metrics.Step(ctx, agent.KindModel, metrics.Completed, time.Since(start))
	a.endChat(span, res, nil)
	if a.Metrics != nil { // decoding the reply costs each step some time
		if reply, err := agent.DecodeModelReply(res); err == nil {
			a.Metrics.Tokens(ctx, cmp.Or(reply.Model, a.Exec.Model.Name()), reply.Usage)
		}
	}
	return res, nil
}

// denials counts the tool messages among a model step's new messages that
// tell the model a person denied the call: a denial reaches a worker only
// there, with the model step that follows it.
func denials(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == agent.RoleTool && m.IsError && strings.HasPrefix(m.Text(), agent.DeniedByOperator) {
			n++
		}
	}
	return n
}

// contentError is the non-retryable failure of a step whose referenced
// content is missing or damaged, or nil for other errors.
func contentError(ctx context.Context, err error) error {
	var ce *execute.ContentError
	if !errors.As(err, &ce) {
		return nil
	}
	run := activity.GetInfo(ctx).WorkflowExecution.ID
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("run %s, step %s: content %s: %v; nothing is guessed: restore the content store (AGENTRUN_JOURNAL) or start the run again", run, ce.Step, ce.Key, ce.Err),
		ErrTypeContent, nil)
}

func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if cerr := contentError(ctx, err); cerr != nil {
		return cerr
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		e = &llm.Error{Class: llm.ClassNetwork, Message: err.Error()}
	}
	// The provider's words go to the run's history: without the worker's
	// secrets.
	return temporal.NewApplicationErrorWithOptions(secret.Scrub(e.Error()), string(e.Class), temporal.ApplicationErrorOptions{
		NonRetryable:   !e.Class.Retryable(),
		NextRetryDelay: e.RetryAfter,
	})
}

// CallTool runs one tool step; a write that is not idempotent goes
// through the guard.
func (a *Activities) CallTool(ctx context.Context, in StepInput) (json.RawMessage, error) {
	if in.Step.Call == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s is not a tool step", in.Step.Name), "BadStep", nil)
	}
	// The worker's own tools decide what a step may do, before anything
	// is read, recorded or run. A refused attempt counts as failed.
	if err := a.checkTool(in.Step); err != nil {
		a.Metrics.Step(ctx, in.Step.Kind, metrics.Failed, 0)
		return nil, err
	}
	if a.Metrics != nil && a.approved(ctx, in) {
		a.Metrics.Decision(ctx, metrics.Approve)
	}
	a.retryStarted(ctx, in.Step.Name)
	ctx, span := a.startTool(ctx, in)
	start := time.Now()
	var decision string // the guard's, for a guarded write
	res, err := a.callTool(ctx, in, &decision)
	a.endTool(span, res, err, decision)
	a.Metrics.Step(ctx, in.Step.Kind, outcome(err), time.Since(start))
	a.retryFailed(ctx, in.Step.Name, err)
	if err == nil && in.Step.Settle != nil {
		if s := agent.SettledOf(res); s != nil {
			a.Metrics.Settled(ctx, *s) // the workflow logs it
		}
	}
	return res, err
}

// outcome classifies how a step attempt ended.
func outcome(err error) metrics.Outcome {
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		return metrics.Completed
	case errors.As(err, &appErr) && appErr.Type() == ErrTypeIndeterminate:
		return metrics.Indeterminate
	}
	return metrics.Failed
}

// approved reports whether this is the first attempt of a tool call that
// ran only because a person approved it: the policy the workflow applies
// (agent.GateWrites) requires approval for the tool. A reconcile retry (a
// later generation) is not a new approval.
func (a *Activities) approved(ctx context.Context, in StepInput) bool {
	if activity.GetInfo(ctx).Attempt > 1 || in.Generation > 1 {
		return false
	}
	t, ok := a.Exec.Tools.Lookup(in.Step.Call.Name)
	return ok && (agent.GateWrites{}).Decide(t.Spec(), *in.Step.Call).Verdict == agent.RequireApproval
}

// callTool runs a tool step; for a guarded write it sets *decision to
// what the guard did (guardDecision).
func (a *Activities) callTool(ctx context.Context, in StepInput, decision *string) (json.RawMessage, error) {
	// Arguments kept by reference are read before the guard records a
	// start: a missing value must not look like a write that may have run.
	step, err := a.Exec.Prepare(ctx, in.Step)
	if err != nil {
		if cerr := contentError(ctx, err); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	var ran atomic.Bool // the tool was called: the guard's decision
	exec := func(ctx context.Context) (json.RawMessage, error) {
		ran.Store(true)
		return a.Exec.Execute(ctx, step)
	}
	if a.Capture && step.Call != nil {
		trace.SpanFromContext(ctx).SetAttributes(tracing.KeyToolArguments.String(string(step.Call.Args)))
	}
	run := func(ctx context.Context) (json.RawMessage, error) {
		return a.heartbeating(ctx, in.Step.Name, exec)
	}
	if in.Step.Kind != agent.KindWrite || in.Step.Idempotent {
		res, err := run(ctx)
		if cerr := contentError(ctx, err); cerr != nil {
			return nil, cerr
		}
		return res, err
	}
	info := activity.GetInfo(ctx)
	runID := info.WorkflowExecution.ID
	// The guard's step carries the call and how it may be settled, for the
	// probe (Guard.Probe).
	guarded := agent.Step{Name: GuardStep(in), Kind: agent.KindWrite, Call: step.Call, Settle: step.Settle}
	att := fence.Attempt{Generation: max(in.Generation, 1), Number: int(info.Attempt), Worker: a.Identity}.Here()
	timeout := a.Exec.Tools.Timeout(step.Call.Name)
	// The guard's own work (its records, a probe) heartbeats too.
	res, err := a.heartbeating(ctx, in.Step.Name, func(ctx context.Context) (json.RawMessage, error) {
		return a.Guard.RunAttempt(ctx, runID, guarded, att, timeout, exec)
	})
	res, err = a.guardResult(ctx, in, step, res, err)
	*decision = guardDecision(res, err, ran.Load())
	return res, err
}

// guardResult maps the guard's answer for a write attempt to the step's
// result or failure.
func (a *Activities) guardResult(ctx context.Context, in StepInput, step agent.Step, res json.RawMessage, err error) (json.RawMessage, error) {
	info := activity.GetInfo(ctx)
	runID := info.WorkflowExecution.ID
	var ind *journal.IndeterminateError
	var fenced *fence.Error
	log := a.log(ctx).With("run_id", runID, "step", in.Step.Name, "attempt", info.Attempt)
	switch {
	case errors.As(err, &fenced):
		log.Warn("an earlier attempt of the write may still be running; waiting for it", "holder", fenced.Holder.String(), "until", operator.FormatUntil(fenced.Until()))
		return nil, temporal.NewNonRetryableApplicationError(fenced.Error(), ErrTypeFenced, nil, fenced.Holder)
	case errors.Is(err, fence.ErrLost):
		log.Warn("write attempt gave up before the tool ran: it no longer holds the write", "error", err)
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeFenceLost, nil)
	case timedOut(err) && step.Settle != nil:
		// The next attempt settles it: by its key, or by asking its probe.
		log.Warn("write attempt gave up (timed out or its deadline passed); the next attempt settles it", "error", err)
		return nil, err
	case timedOut(err):
		log.Warn("write attempt gave up (timed out or its deadline passed)", "error", err)
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s: %v; it may or may not have taken effect: check, then reconcile it (done RESULT or retry)", in.Step.Name, err),
			ErrTypeIndeterminate, nil)
	case errors.As(err, &ind):
		log.Warn("write is indeterminate")
		probe := ""
		if ind.Probe != nil {
			probe = "; " + ind.Probe.String()
		}
		if ind.Holder != nil {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s started on an earlier attempt and never recorded its result%s; %s: check whether it took effect after that, then reconcile it (done RESULT or retry)", in.Step.Name, probe, ind.Holder.MayRun()),
				ErrTypeIndeterminate, nil, *ind.Holder)
		}
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s started on an earlier attempt and never recorded its result%s; check whether it took effect, then reconcile it (done RESULT or retry)", in.Step.Name, probe),
			ErrTypeIndeterminate, nil)
	case errors.Is(err, operator.ErrInvalid):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeGuard, nil)
	case err != nil && ctx.Err() != nil:
		// Temporal refused the heartbeat (the attempt timed out or was
		// superseded) or the worker stops: this attempt is over.
		log.Warn("write attempt gave up: its context ended", "error", context.Cause(ctx))
	}
	return res, err
}

// timedOut reports whether a write's tool call outlasted its timeout or
// its attempt's deadline (the guard's context, whose deadline is the
// attempt's: tools.Live may see it pass before its timer fires): it may or
// may not have taken effect.
func timedOut(err error) bool {
	return errors.Is(err, tools.ErrTimeout) || errors.Is(err, fence.ErrDeadline) || errors.Is(err, context.DeadlineExceeded)
}

// GuardStep is the name of a write step in the guard journal: the run key,
// the step, and the generation when it is above 1, e.g.
// "RUNKEY/tool/2/0/create_ticket#2".
func GuardStep(in StepInput) string {
	name := in.Step.Name
	if in.Generation > 1 {
		name += "#" + strconv.Itoa(in.Generation)
	}
	if in.RunKey != "" {
		name = in.RunKey + "/" + name
	}
	return name
}

// heartbeating runs fn while heartbeating every HeartbeatEvery, with the
// step's name as details.
func (a *Activities) heartbeating(ctx context.Context, step string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	every := a.HeartbeatEvery
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, step)
			}
		}
	}()
	return fn(ctx)
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}
