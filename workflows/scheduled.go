package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
)

// An activity tool's call (agent.ToolSpec.Activity) runs as the tool's own
// activity, scheduled on its own task queue with its own options. The
// write guarantees come from Temporal's record of that activity and from
// its options: a write that is not safe to run again gets one attempt, so
// one that started and never reported is a timeout, never a second run;
// it is Indeterminate with its fence (lastAttempt: until its deadline has
// passed, plus the grace), as any write.

// ErrTypeOutcomeUnknown is the failure type of an activity tool's error
// that says its effect may or may not have happened (agentrun's
// OutcomeUnknownError, whose Go type name Temporal carries as the type).
const ErrTypeOutcomeUnknown = "OutcomeUnknownError"

// prepareTimeout bounds the local activities around an activity tool's
// call: a check of the step and maybe a read of its arguments.
const prepareTimeout = 30 * time.Second

// scheduled runs tool step s, a call of activity tool spec, with the
// step's activity input in.
func (r *execution) scheduled(s agent.Step, spec agent.ToolSpec, in activities.StepInput) (json.RawMessage, error) {
	lao := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: prepareTimeout,
		RetryPolicy:         retryPolicy(stepAttempts),
	})
	var call activities.ScheduledCall
	if err := workflow.ExecuteLocalActivity(lao, activities.NamePrepareCall, in).Get(r.ctx, &call); err != nil {
		return nil, err
	}
	if call.Result != nil {
		return call.Result, nil // the arguments do not fit the tool: the model reads why
	}
	var out json.RawMessage
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(r.ctx, scheduledOptions(s, spec, in.Generation)), spec.Activity.Name, call.Input).Get(r.ctx, &out)
	if err != nil {
		msg, ordinary := ordinaryError(err)
		if !ordinary {
			return nil, err
		}
		return agent.EncodeToolResult(agent.ToolResult{IsError: true, Content: msg}), nil
	}
	res := agent.ToolResult{Content: resultText(out)}
	if len(res.Content) <= agent.InlineLimit {
		return agent.EncodeToolResult(res), nil
	}
	var kept json.RawMessage
	err = workflow.ExecuteLocalActivity(lao, activities.NameKeepResult, s.Name, res).Get(r.ctx, &kept)
	return kept, err
}

// scheduledOptions are the options of an activity tool's call: the
// tool's, with one attempt for a write that is not safe to run again.
func scheduledOptions(s agent.Step, spec agent.ToolSpec, gen int) workflow.ActivityOptions {
	a := spec.Activity
	opts := workflow.ActivityOptions{
		ActivityID:             s.Name,
		TaskQueue:              a.TaskQueue,
		StartToCloseTimeout:    a.StartToClose,
		ScheduleToStartTimeout: a.ScheduleToStart,
		HeartbeatTimeout:       a.Heartbeat,
		Summary:                s.Name + " · " + string(s.Kind) + " · activity " + a.Name,
	}
	if r := a.Retry; r != nil {
		opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: r.InitialInterval, BackoffCoefficient: r.BackoffCoefficient,
			MaximumInterval: r.MaximumInterval, MaximumAttempts: r.MaximumAttempts, NonRetryableErrorTypes: r.NonRetryable}
	}
	if s.Kind == agent.KindWrite && !s.Idempotent {
		if gen > 1 {
			opts.ActivityID = fmt.Sprintf("%s#%d", s.Name, gen)
		}
		if s.Settle == nil || s.Settle.KeyArg == "" {
			opts.RetryPolicy = &temporal.RetryPolicy{MaximumAttempts: 1}
		}
		opts.WaitForCancellation = true
	}
	return opts
}

// ordinaryError returns the message of an activity tool's failure that
// the model reads as a failed call: an error its function returned. A
// timeout, a panic, a cancel or an error that says the outcome is unknown
// is not one.
func ordinaryError(err error) (string, bool) {
	var appErr *temporal.ApplicationError
	var panicErr *temporal.PanicError
	var timeoutErr *temporal.TimeoutError
	var canceledErr *temporal.CanceledError
	switch {
	case errors.As(err, &panicErr), errors.As(err, &timeoutErr), errors.As(err, &canceledErr):
		return "", false
	case errors.As(err, &appErr) && appErr.Type() != ErrTypeOutcomeUnknown:
		return appErr.Message(), true
	}
	return "", false
}

// resultText is what the model reads of an activity tool's result: a
// string as it is, anything else as its JSON.
func resultText(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}
