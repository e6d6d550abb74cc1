package activities

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/ratelimit"
)

// RetrySignal is the signal a step's activity sends its own run while the
// server retries it: when an attempt failed and another will follow, and
// when a later attempt starts. The run shows it (its state, the Web UI's
// current details, a step.retrying event on its stream). It is not an
// operator signal: the run checks it like any input and only shows it.
const RetrySignal = "agentrun.step-retry"

// RetryNotice is the payload of RetrySignal.
type RetryNotice struct {
	Step string `json:"step"`
	// Attempt is the attempt the notice is about: the one that failed
	// (Failed), or the one that started.
	Attempt int  `json:"attempt"`
	Failed  bool `json:"failed,omitempty"`
	// Error is how the attempt failed: the error's class and message
	// (already free of the worker's secrets), at most MaxNoticeError bytes.
	Error string `json:"error,omitempty"`
	// NextAt is when the next attempt is due (Failed), when the error
	// said (a provider's Retry-After); zero: the policy's backoff. For a
	// wait (Limit), the call's slot.
	NextAt time.Time `json:"next_at,omitzero"`
	// Limit, when set, makes the notice a wait, not a retry: the attempt
	// (any, the first too) waits for the rate limit of the pool Limit
	// names until NextAt, and no attempt failed.
	Limit string `json:"limit,omitempty"`
	// Paused says the wait is the provider's (a 429's Retry-After held
	// the whole pool), not the declared limits'.
	Paused bool `json:"paused,omitempty"`
}

// limitWaited tells the run that this attempt of step waits for a rate
// limit's slot (ratelimit.Limiter.Take calls it).
func (a *Activities) limitWaited(ctx context.Context, step string, w ratelimit.Wait) {
	a.notify(ctx, RetryNotice{Step: step, Attempt: int(activity.GetInfo(ctx).Attempt), Limit: w.Pool, Paused: w.Paused, NextAt: w.Until})
}

// MaxNoticeError bounds RetryNotice.Error.
const MaxNoticeError = 500

// noticeTimeout bounds the signal: a notice that cannot be sent is logged
// and dropped, and never holds a step up for long.
const noticeTimeout = 3 * time.Second

// retryStarted tells the run that a later attempt of step started.
func (a *Activities) retryStarted(ctx context.Context, step string) {
	info := activity.GetInfo(ctx)
	if info.Attempt <= 1 || info.RetryPolicy == nil && a.SignalRun == nil {
		// No policy: the sdk's test environment (as in retryFailed), whose
		// activities have no client to signal with (its mock exits the
		// process on the call).
		return
	}
	a.notify(ctx, RetryNotice{Step: step, Attempt: int(info.Attempt)})
}

// retryFailed tells the run that this attempt of step failed with err and
// when the server will try again; it sends nothing when no attempt will
// follow (err is final, the attempts are used up, the run is cancelled).
func (a *Activities) retryFailed(ctx context.Context, step string, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	info := activity.GetInfo(ctx)
	if info.RetryPolicy == nil && a.SignalRun == nil {
		// The sdk did not say how the server retries. A real server always
		// says; the sdk's test environments do not, and there only a test's
		// SignalRun takes notices.
		return
	}
	next, ok := nextAttempt(info.RetryPolicy, info.Attempt, err, time.Now())
	if !ok {
		return
	}
	msg := err.Error()
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		msg = appErr.Message()
		if t := appErr.Type(); t != "" && !strings.HasPrefix(msg, t) {
			msg = t + ": " + msg
		}
	}
	a.notify(ctx, RetryNotice{Step: step, Attempt: int(info.Attempt), Failed: true, Error: agent.Clip(msg, MaxNoticeError), NextAt: next})
}

// notify sends n to the activity's run: through SignalRun when it is set,
// else with the activity's client. A notice that cannot be sent is logged.
func (a *Activities) notify(ctx context.Context, n RetryNotice) {
	info := activity.GetInfo(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), noticeTimeout)
	defer cancel()
	send := a.SignalRun
	if send == nil {
		send = func(ctx context.Context, n RetryNotice) error {
			return activity.GetClient(ctx).SignalWorkflow(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, RetrySignal, n)
		}
	}
	if err := send(sctx, n); err != nil {
		a.log(ctx).Warn("tell the run a step is retried", "run_id", info.WorkflowExecution.ID, "step", n.Step, "attempt", n.Attempt, "error", err)
	}
}

// nextAttempt says whether the server retries an attempt that failed with
// err under policy p (nil: the sdk did not say; then only the error's own
// flag decides), and the error's own next retry delay (a provider's
// Retry-After) as the time it is due, zero for the policy's backoff, which
// the run computes from its own options.
func nextAttempt(p *temporal.RetryPolicy, attempt int32, err error, now time.Time) (time.Time, bool) {
	if p != nil && p.MaximumAttempts > 0 && attempt >= p.MaximumAttempts {
		return time.Time{}, false
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		if appErr.NonRetryable() || p != nil && slices.Contains(p.NonRetryableErrorTypes, appErr.Type()) {
			return time.Time{}, false
		}
		if d := appErr.NextRetryDelay(); d > 0 {
			return now.Add(d), true
		}
	}
	return time.Time{}, true
}
