package workflows

import (
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
)

// Activity timeouts and retries.
const (
	// HeartbeatTimeout is how soon a dead worker is noticed inside a step.
	HeartbeatTimeout = 5 * time.Second
	// StepTimeout bounds one attempt of a model or tool step.
	StepTimeout = 10 * time.Minute
)

// The retry policy of the steps, and the bounds that are not part of the
// operator's view.
const (
	// retryInterval is the wait before a step's second attempt; each
	// later wait is retryBackoff times the last, at most retryMaxInterval.
	// The numbers are the local driver's too (execute.StepRetry).
	retryInterval    = execute.RetryInterval
	retryBackoff     = execute.RetryBackoff
	retryMaxInterval = execute.RetryMaxInterval
	// stepAttempts bounds the attempts of a model call, a read, an
	// idempotent write, a write with an idempotency key (its key makes
	// every attempt safe) and the tool list.
	stepAttempts = execute.RetryAttempts
	// writeAttempts bounds the attempts of a write without a key: a second
	// attempt settles it (its result, its probe's, or Indeterminate).
	writeAttempts = 3
	// timeoutSlack is added to a model's or a tool's own timeout to give
	// its activity's start-to-close: the request times out first.
	timeoutSlack = time.Minute
	// toolsTimeout bounds one attempt of the tool list.
	toolsTimeout = time.Minute
)

// retryPolicy is the policy of a step's activity: backoff from
// retryInterval, at most attempts attempts. It lists no non-retryable error
// types: every failure a step must not retry (a model error of a final
// class, activities.NonRetryableModelErrors; Indeterminate, GuardRefused,
// AttemptRunning, FenceLost, Refused, ContentMissing) is made
// non-retryable by the activity that returns it, in every build since the
// first, and the server does not retry those whatever the policy says. A
// list here would repeat that in every ActivityTaskScheduled event of the
// run's history (histories before this build have it).
func retryPolicy(attempts int32) *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval: retryInterval, BackoffCoefficient: retryBackoff, MaximumInterval: retryMaxInterval,
		MaximumAttempts: attempts,
	}
}

// retryDelay is the wait after a step's attempt under p, as the server
// computes it (execute.Retry.Wait).
func retryDelay(p *temporal.RetryPolicy, attempt int) time.Duration {
	return execute.Retry{Interval: p.InitialInterval, Backoff: p.BackoffCoefficient, MaxInterval: p.MaximumInterval}.Wait(attempt)
}

// toolsOptions are the options of the tool list's activity (the server's
// default backoff).
func toolsOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		ActivityID:          "tools",
		Summary:             "tools · list",
		StartToCloseTimeout: toolsTimeout,
		HeartbeatTimeout:    HeartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: stepAttempts},
	}
}

// stepOptions are the options of step s's activity, from the catalog
// (the model, the model's and each tool's timeout); gen is the execution
// of a write that is not idempotent (1, then one more for each retry a
// person asked for), which names its activity after the first. The
// activity id is the step name (with "#gen"), which replay matches.
//
//	model                 model timeout + limit wait + slack (at least StepTimeout), 10 attempts
//	read, idempotent      tool timeout + slack (else StepTimeout), 10 attempts
//	write                 activities.WriteStartToClose of its timeout, 3 attempts (10 with a key),
//	                      waits for cancellation
func stepOptions(s agent.Step, cat activities.Catalog, gen int) workflow.ActivityOptions {
	opts := workflow.ActivityOptions{
		ActivityID:          s.Name,
		StartToCloseTimeout: StepTimeout,
		HeartbeatTimeout:    HeartbeatTimeout,
	}
	if s.Kind == agent.KindModel {
		opts.Summary = s.Name + " · " + cat.Model
		opts.RetryPolicy = retryPolicy(stepAttempts)
		// The model timeout bounds a request answered whole and caps a
		// streamed answer (whose idle timeout is never longer).
		// A wait for the rate limit's slot comes first (cat.LimitWait).
		if t := cat.ModelTimeout + cat.LimitWait + timeoutSlack; t > opts.StartToCloseTimeout {
			opts.StartToCloseTimeout = t // the request times out first
		}
		return opts
	}
	write := s.Kind == agent.KindWrite && !s.Idempotent
	opts.Summary = s.Name + " · " + string(s.Kind)
	if t, ok := cat.Timeouts[s.Call.Name]; ok && t > 0 {
		opts.StartToCloseTimeout = t + timeoutSlack
		if write {
			opts.StartToCloseTimeout = activities.WriteStartToClose(t)
		}
	}
	opts.RetryPolicy = retryPolicy(stepAttempts)
	if write {
		if gen > 1 {
			opts.ActivityID = s.Name + "#" + strconv.Itoa(gen)
		}
		if s.Settle == nil || s.Settle.KeyArg == "" {
			opts.RetryPolicy.MaximumAttempts = writeAttempts
		}
		// A cancelled run waits for the write to stop, so that its
		// state says whether it completed.
		opts.WaitForCancellation = true
	}
	if s.Settle != nil {
		opts.Summary += settleSummary(*s.Settle)
	}
	return opts
}

// settleSummary says in a step's summary how an interrupted write is
// settled without a person.
func settleSummary(s agent.Settle) string {
	var how []string
	if s.KeyArg != "" {
		how = append(how, "key "+s.KeyArg)
	}
	if s.Probe != nil {
		how = append(how, "probe "+s.Probe.Tool)
	}
	return " · settles by " + strings.Join(how, ", ")
}
