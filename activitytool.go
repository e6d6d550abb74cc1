package agentrun

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
)

// ActivityOptions say how a run schedules an activity tool's activity
// (see [ActivityTool]): the fields of workflow.ActivityOptions that an
// activity tool takes, with the same meaning, and the activity's name.
type ActivityOptions struct {
	// Name is the name the activity is registered under. Default: the name
	// Temporal registers the function under (its function's or method's
	// name); give it when you registered the activity under another one.
	Name string
	// TaskQueue is the queue of the workers that run the activity.
	// Default "": the run's own.
	TaskQueue string
	// StartToCloseTimeout bounds one attempt, and is the tool's timeout: a
	// write still running then is Indeterminate. Default two minutes.
	StartToCloseTimeout time.Duration
	// ScheduleToStartTimeout bounds the wait for a worker to take an
	// attempt (an attempt never taken did not run). Default 0: no bound.
	ScheduleToStartTimeout time.Duration
	// HeartbeatTimeout notices a worker that died within an attempt
	// sooner, for an activity that heartbeats. Default 0: none.
	HeartbeatTimeout time.Duration
	// RetryPolicy is the retry policy of a read, or of a write that is
	// Idempotent or takes an IdempotencyKey. Default nil: Temporal's. A
	// write that is neither runs at most once: a policy that allows more
	// than one attempt is an error.
	RetryPolicy *temporal.RetryPolicy
}

// ActivityTool makes a tool of one of your Temporal activities, registered
// on your workers as you register it today. A run's call of the tool is
// scheduled as that activity, on its task queue, with the options ao: the
// Web UI shows it as your activity, and your workers run it. Arguments are
// checked against In's schema first, as [NewTool]'s are, on the agentrun
// worker; so is the call's approval.
//
// The activity's error decides what happens, as for NewTool: an ordinary
// error is a failed call the model reads; an [OutcomeUnknownError] (return
// ErrOutcomeUnknown or OutcomeUnknown(err) unwrapped), a panic, or an
// attempt that timed out (its worker was killed, frozen or cut off) makes a
// write Indeterminate. A write that is not Idempotent and takes no
// IdempotencyKey is scheduled for one attempt only; after a timeout, a
// person's retry waits until that attempt's deadline has passed, plus a
// grace, so an attempt whose worker was frozen cannot act beside the
// retry: the function should check its context before acting, as any
// activity should.
//
// opts.Timeout must be 0: the activity's StartToCloseTimeout is the tool's
// timeout. On the local engine, which has no activities, the function is
// called as a NewTool function is: it must not need an activity context
// (activity.GetInfo, heartbeats) there.
func ActivityTool[In, Out any](opts ToolOptions, activity func(ctx context.Context, in In) (Out, error), ao ActivityOptions) (*Tool, error) {
	if opts.Timeout != 0 {
		return nil, fmt.Errorf("tool %s: an activity tool's timeout is its ActivityOptions.StartToCloseTimeout; leave ToolOptions.Timeout 0", opts.Name)
	}
	if activity == nil {
		return nil, fmt.Errorf("tool %s: the activity is nil", opts.Name)
	}
	if opts.Probe != nil {
		return nil, fmt.Errorf("tool %s: an activity tool takes no probe (the engine's guard, which asks probes, does not run it); settle it by its IdempotencyKey, or by a person", opts.Name)
	}
	spec, err := ao.spec(opts, activityName(activity))
	if err != nil {
		return nil, err
	}
	opts.Timeout = spec.StartToClose
	t, err := NewTool(opts, activity)
	if err != nil {
		return nil, err
	}
	t.spec.Activity = spec
	return t, nil
}

// funcLiteral matches the name Go gives a function literal.
var funcLiteral = regexp.MustCompile(`^func\d+$`)

// activityName is the name Temporal registers fn under by default: the
// last part of its name, without the method value's "-fm"; "" for a
// function literal, which has no name to register it by.
func activityName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	name := strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
	if funcLiteral.MatchString(name) {
		return ""
	}
	return name
}

// spec is the activity's spec from ao, checked; name is the function's own.
func (ao ActivityOptions) spec(opts ToolOptions, name string) (*agent.ActivitySpec, error) {
	if ao.Name != "" {
		name = ao.Name
	}
	if name == "" {
		return nil, fmt.Errorf("tool %s: the activity is a function literal, which Temporal registers under no name of its own; set ActivityOptions.Name to the name you registered it under", opts.Name)
	}
	if ao.StartToCloseTimeout < 0 || ao.ScheduleToStartTimeout < 0 || ao.HeartbeatTimeout < 0 {
		return nil, fmt.Errorf("tool %s: a negative timeout in its ActivityOptions; want a positive duration, or 0 for the default", opts.Name)
	}
	s := &agent.ActivitySpec{Name: name, TaskQueue: ao.TaskQueue, StartToClose: ao.StartToCloseTimeout,
		ScheduleToStart: ao.ScheduleToStartTimeout, Heartbeat: ao.HeartbeatTimeout}
	if s.StartToClose == 0 {
		s.StartToClose = tools.DefaultTimeout
	}
	p := ao.RetryPolicy
	if p == nil {
		return s, nil
	}
	once := opts.Write && !opts.Idempotent && opts.IdempotencyKey == ""
	switch {
	case once && p.MaximumAttempts != 1:
		return nil, fmt.Errorf("tool %s: a write that is not idempotent runs at most once, and its RetryPolicy allows %s; set MaximumAttempts 1, or mark the tool Idempotent or give it an IdempotencyKey", opts.Name, attemptsShown(p.MaximumAttempts))
	case p.MaximumAttempts < 0 || p.InitialInterval < 0 || p.MaximumInterval < 0:
		return nil, fmt.Errorf("tool %s: a negative value in its RetryPolicy; want MaximumAttempts ≥ 0 (0: no limit) and intervals ≥ 0", opts.Name)
	case p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1:
		return nil, fmt.Errorf("tool %s: RetryPolicy.BackoffCoefficient %g; want at least 1, or 0 for the default", opts.Name, p.BackoffCoefficient)
	case p.MaximumInterval != 0 && p.MaximumInterval < p.InitialInterval:
		return nil, fmt.Errorf("tool %s: RetryPolicy.MaximumInterval %s is below its InitialInterval %s", opts.Name, p.MaximumInterval, p.InitialInterval)
	}
	s.Retry = &agent.ActivityRetry{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryable: p.NonRetryableErrorTypes}
	return s, nil
}

func attemptsShown(n int32) string {
	if n == 0 {
		return "any number of attempts"
	}
	return fmt.Sprintf("%d attempts", n)
}
