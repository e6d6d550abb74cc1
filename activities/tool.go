package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/tools"
)

// The tool step: a read runs as is; a write runs under the guard's records and
// the fence, within its start-to-close bound.

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
		if spec.Kind != agent.KindWrite || spec.Idempotent || spec.Activity != nil {
			continue
		}
		t := set.Timeout(spec.Name)
		if t+WriteSlack > MaxWriteStartToClose {
			return fmt.Errorf("tool %s: its timeout %s leaves no room in its write activity's start-to-close %s for the guard's records and the fence's %s grace; want a timeout of at most %s", spec.Name, t, WriteStartToClose(t), fence.Grace, MaxWriteStartToClose-WriteSlack)
		}
	}
	return nil
}

// CallTool runs one tool step; a write that is not idempotent goes
// through the guard.
func (a *Activities) CallTool(ctx context.Context, in StepInput) (json.RawMessage, error) {
	if in.Step.Call == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s is not a tool step", in.Step.Name), "BadStep", nil)
	}
	a, err := a.forAgent(in.Agent, in.Step.Name)
	if err != nil {
		return nil, err
	}
	// The worker's own tools decide what a step may do, before anything
	// is read, recorded or run. A refused attempt counts as failed.
	if err := a.checkTool(in.Step); err != nil {
		a.Metrics.Step(ctx, in.Step.Kind, metrics.Failed, 0)
		return nil, err
	}
	if t, _ := a.Exec.Tools.Lookup(in.Step.Call.Name); t.Spec().Activity != nil {
		a.Metrics.Step(ctx, in.Step.Kind, metrics.Failed, 0)
		return nil, refused("step %s calls activity tool %s in the engine's tool step; a run schedules its activity %s itself", in.Step.Name, in.Step.Call.Name, t.Spec().Activity.Name)
	}
	// So do the spec the run's policy decided the call by, and the run's
	// whole tool list (binding.go).
	if err := cmp.Or(a.checkSpec(in), a.checkBinding(in)); err != nil {
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
	// The approval decision the run acted on is the worker's rule's, on
	// the arguments the tool gets.
	if t, ok := a.Exec.Tools.Lookup(step.Call.Name); ok {
		if why := a.Exec.CheckApproval(step, t.Spec()); why != "" {
			return nil, refused("%s", why)
		}
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
