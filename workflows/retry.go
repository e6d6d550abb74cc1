package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/ratelimit"
)

// How far a retry notice's next attempt may lie from the run's clock: the
// server's backoff is at most retryMaxInterval, a provider's Retry-After
// can be longer, and the worker's clock may differ a little from the
// server's.
const (
	noticePast   = time.Minute
	noticeFuture = 24 * time.Hour
)

// recentSteps bounds execution.ran: a late notice trails its step by one
// signal's delivery, a few steps at the most.
const recentSteps = 8

// errStaleNotice: a retry notice of a step that has completed since.
var errStaleNotice = errors.New("a retry notice of a step that completed")

// maxNoticeAttempt bounds a notice's attempt numbers.
const maxNoticeAttempt = 10_000

// retrying shows a retry notice of the running step (activities.RetrySignal):
// in the state, the current details and the stream. A notice that is not
// one, or names another step than the one running, is rejected like any
// bad input. It adds no command, so histories replay unchanged.
func (r *execution) retrying(raw converter.RawValue) {
	n, err := r.checkNotice(raw)
	if errors.Is(err, errStaleNotice) {
		// A later attempt's start is sent as it begins, so it can arrive
		// after the attempt completed: nothing to show, no input to refuse.
		workflow.GetLogger(r.ctx).Debug("late retry notice dropped", "step", n.Step, "attempt", n.Attempt)
		return
	}
	if err != nil {
		if r.reject(activities.RetrySignal, raw, err) {
			r.showDetails()
			return
		}
		r.showDetails()
		return
	}
	if n.Limit != "" {
		r.limitWait(n)
		return
	}
	if w := r.state.LimitWait; w != nil && w.Step == n.Step && n.Attempt >= w.Attempt {
		r.state.LimitWait = nil // that attempt went on: it failed, or a later one began
	}
	policy := r.runningPolicy
	rt := &Retry{Step: n.Step, MaxAttempts: int(policy.MaximumAttempts), Since: r.stepBegan}
	if old := r.state.Retry; old != nil && old.Step == n.Step {
		*rt = *old
	}
	if n.Failed {
		if n.Attempt+1 < rt.Attempt || rt.MaxAttempts > 0 && n.Attempt >= rt.MaxAttempts {
			return // a late notice of an earlier attempt, or of the last one: the step fails now
		}
		next := n.NextAt // a provider's Retry-After, else the step's backoff
		if next.IsZero() {
			next = workflow.Now(r.ctx).Add(retryDelay(policy, n.Attempt))
		}
		rt.Attempt, rt.LastError, rt.NextAt = n.Attempt+1, n.Error, next
	} else {
		if n.Attempt < rt.Attempt || n.Attempt == rt.Attempt && rt.NextAt.IsZero() {
			return // already shown
		}
		if n.Attempt > rt.Attempt {
			rt.LastError = "" // the attempt before it did not say how it ended
		}
		rt.Attempt, rt.NextAt = n.Attempt, time.Time{}
	}
	r.state.Retry = rt
	workflow.GetLogger(r.ctx).Info("step retrying", "step", rt.Step, "attempt", rt.Attempt, "max_attempts", rt.MaxAttempts, "last_error", logtext.Text(rt.LastError))
	r.showDetails()
	r.event(progress.Event{Type: progress.EventStepRetrying, Step: rt.Step, Attempt: rt.Attempt, Reason: rt.String()})
}

// limitWait shows a wait notice: an attempt of the running step waits for
// its rate limit's slot. A notice of an earlier attempt than the one shown
// is late and changes nothing.
func (r *execution) limitWait(n activities.RetryNotice) {
	if old := r.state.LimitWait; old != nil && old.Step == n.Step && n.Attempt < old.Attempt {
		return
	}
	if rt := r.state.Retry; rt != nil && rt.Step == n.Step && n.Attempt < rt.Attempt {
		return
	}
	w := &LimitWait{Step: n.Step, Attempt: n.Attempt, Pool: n.Limit, Paused: n.Paused, Until: n.NextAt}
	r.state.LimitWait = w
	now := workflow.Now(r.ctx)
	workflow.GetLogger(r.ctx).Info("step waiting for its rate limit", "step", w.Step, "attempt", w.Attempt, "pool", w.Pool, "paused", w.Paused, "next_slot", w.Until)
	r.showDetails()
	r.event(progress.Event{Type: progress.EventStepWaiting, Step: w.Step, Attempt: w.Attempt, Reason: w.At(now)})
}

// checkNotice decodes a retry notice and checks it against the run: JSON
// of activities.RetryNotice and nothing else, for the step that runs now,
// with sane numbers and times.
func (r *execution) checkNotice(raw converter.RawValue) (activities.RetryNotice, error) {
	var n activities.RetryNotice
	p := raw.Payload()
	if p == nil || string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		return n, errors.New("not a JSON retry notice")
	}
	dec := json.NewDecoder(bytes.NewReader(p.GetData()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return n, fmt.Errorf("not a retry notice: %v", err)
	}
	now := workflow.Now(r.ctx)
	if slices.Contains(r.ran, n.Step) && n.Step != r.running && !n.Failed && (n.Attempt >= 2 || n.Limit != "") && n.Attempt <= maxNoticeAttempt && n.Error == "" {
		return n, errStaleNotice // an attempt's start or wait, sent as it began, read after it completed
	}
	switch {
	case r.running == "":
		return n, fmt.Errorf("a retry notice of step %q, but no step runs", agent.Clip(n.Step, 100))
	case n.Step != r.running:
		return n, fmt.Errorf("a retry notice of step %q, but the step that runs is %s", agent.Clip(n.Step, 100), r.running)
	case n.Attempt < 1 || n.Attempt > maxNoticeAttempt:
		return n, fmt.Errorf("a retry notice with attempt %d: want 1 to %d", n.Attempt, maxNoticeAttempt)
	case r.runningPolicy.MaximumAttempts > 0 && n.Attempt > int(r.runningPolicy.MaximumAttempts):
		return n, fmt.Errorf("a retry notice with attempt %d of %d", n.Attempt, r.runningPolicy.MaximumAttempts)
	case n.Limit != "" && (n.Failed || n.Error != ""):
		return n, errors.New("a wait notice (limit) that says an attempt failed: a wait is no failure")
	case n.Limit != "" && ratelimit.CheckPool(n.Limit) != nil:
		return n, fmt.Errorf("a wait notice of limit %q: %v", agent.Clip(n.Limit, 100), ratelimit.CheckPool(n.Limit))
	case n.Limit != "" && (n.NextAt.Before(now.Add(-noticePast)) || n.NextAt.After(now.Add(noticeFuture))):
		return n, fmt.Errorf("a wait notice whose slot is at %s, not within %v of the run's clock", n.NextAt.UTC().Format(time.RFC3339), noticeFuture)
	case n.Limit == "" && n.Paused:
		return n, errors.New("a retry notice that says paused but names no limit")
	case !n.Failed && n.Attempt < 2 && n.Limit == "":
		return n, errors.New("a retry notice of a first attempt")
	case n.Failed && !n.NextAt.IsZero() && (n.NextAt.Before(now.Add(-noticePast)) || n.NextAt.After(now.Add(noticeFuture))):
		return n, fmt.Errorf("a retry notice whose next attempt is due at %s, not within %v of the run's clock", n.NextAt.UTC().Format(time.RFC3339), noticeFuture)
	case len(n.Error) > activities.MaxNoticeError:
		return n, fmt.Errorf("a retry notice whose error is %d bytes: at most %d", len(n.Error), activities.MaxNoticeError)
	}
	n.Error = oneLine(n.Error)
	return n, nil
}

// oneLine joins s's lines with spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// failure is the reason a run fails with when step s failed for good with
// err after the server's retries: what failed, how many attempts over how
// long, the last error without the sdk's wrapping, and what to do.
func (r *execution) failure(s agent.Step, err error) string {
	took := workflow.Now(r.ctx).Sub(r.stepBegan).Round(time.Second)
	attempts := 1
	if rt := r.state.Retry; rt != nil && rt.Step == s.Name {
		attempts = rt.Attempt
	}
	var actErr *temporal.ActivityError
	if errors.As(err, &actErr) && actErr.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED && r.runningPolicy.MaximumAttempts > 0 {
		attempts = int(r.runningPolicy.MaximumAttempts)
	}
	class, msg := lastError(err)
	what := "the model call"
	if s.Kind != agent.KindModel && s.Call != nil {
		what = "the tool " + s.Call.Name
	}
	how := fmt.Sprintf("after %s over %s", plural(attempts, "attempt"), took)
	if attempts == 1 {
		how = "at its first attempt, which is not retried for this error"
		if took >= time.Second {
			how = fmt.Sprintf("at its first attempt (after %s), which is not retried for this error", took)
		}
	}
	reason := fmt.Sprintf("%s: %s failed %s: %s", s.Name, what, how, msg)
	if class != "" && !strings.HasPrefix(msg, class) {
		reason = fmt.Sprintf("%s: %s failed %s: %s: %s", s.Name, what, how, class, msg)
	}
	if d := r.catalogDiff(err); d != "" {
		reason += "; first difference: " + d
	}
	if hint := failureHint(s.Kind, class); hint != "" {
		reason += ". " + hint
	}
	return reason
}

// catalogDiff names how the run's catalog differs from the worker's own,
// when the worker refused a step for it: the refusal's details are the
// worker's binding (activities.Binding). "" for any other failure.
func (r *execution) catalogDiff(err error) string {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeRefused || !appErr.HasDetails() {
		return ""
	}
	var own activities.Binding
	if appErr.Details(&own) != nil || own.ToolsKey == "" {
		return ""
	}
	return oneLine(r.cat.Binding().Diff(own))
}

// lastError is the class (the application error's type, or the kind of
// timeout) and the message of a step's last failure, without the sdk's
// "(type: ..., retryable: ...)" wrapping.
func lastError(err error) (class, msg string) {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr):
		return appErr.Type(), oneLine(appErr.Message())
	case errors.As(err, &timeoutErr):
		return "Timeout", "its attempt ran out of time (" + strings.ToLower(strings.TrimPrefix(timeoutErr.TimeoutType().String(), "TIMEOUT_TYPE_")) + " timeout): the worker running it stopped answering or the call took too long"
	}
	if u := errors.Unwrap(err); u != nil {
		err = u
	}
	return "", oneLine(err.Error())
}

// failureHint says what to do after a step failed for good with an error
// of class.
func failureHint(kind agent.Kind, class string) string {
	if kind != agent.KindModel {
		return "Fix what the tool needs, then start the run again"
	}
	switch class {
	case "NetworkError":
		return "The model server did not answer: start it (or fix its address), then start the run again"
	case "Timeout":
		return "The model did not answer in time: check the model server's load, or raise AGENTRUN_MODEL_TIMEOUT, then start the run again"
	case "RateLimit":
		return "The provider kept refusing for its rate limit: wait, or raise the limit, then start the run again"
	case "ServerError":
		return "The model server kept failing: check its logs, then start the run again"
	case "Authentication":
		return "The provider refused the worker's key: fix the key in the worker's settings, then start the run again"
	case "ModelNotFound":
		return "The provider has no such model: fix AGENTRUN_MODEL on the workers, then start the run again"
	case "ContextTooLong":
		return "The conversation is longer than the model takes: start the run again with a shorter prompt or a model with a longer context"
	case "BadRequest":
		return "The provider refused the request: check the model's settings, then start the run again"
	}
	return ""
}
