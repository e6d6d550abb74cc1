package execute

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// The retry policy of model and read steps, on both engines: the Temporal
// workflow builds its activities' retry policy from these (workflows), and
// the local driver retries with StepRetry (local.Engine.Retry).
const (
	// RetryInterval is the wait before a step's second attempt; each
	// later wait is RetryBackoff times the last, at most RetryMaxInterval.
	RetryInterval    = time.Second
	RetryBackoff     = 2
	RetryMaxInterval = time.Minute
	// RetryAttempts bounds the attempts of a step.
	RetryAttempts = 10
)

// Retry is the retry policy of model and read steps: which failures are
// tried again (Transient), how often and after what wait. StepRetry is the
// engines' policy; the local engine's settings may change its attempts and first wait.
type Retry struct {
	// MaxAttempts bounds the attempts of one step (at least 1).
	MaxAttempts int
	// Interval is the wait before the second attempt; each later wait
	// is Backoff times the last, at most MaxInterval (or Interval, when
	// that is longer).
	Interval    time.Duration
	Backoff     float64
	MaxInterval time.Duration
}

// StepRetry is the policy of model and read steps on both engines.
var StepRetry = Retry{MaxAttempts: RetryAttempts, Interval: RetryInterval, Backoff: RetryBackoff, MaxInterval: RetryMaxInterval}

// Attempts is the most attempts of one step.
func (r Retry) Attempts() int { return max(r.MaxAttempts, 1) }

// Next says whether step, whose attempt n (from 1) failed with err, is
// tried again, and after how long: only a transient failure (Transient)
// of a model or read step, and only while attempts remain. The wait is
// Interval × Backoff^(n-1), at most MaxInterval; a server that said when
// to come back (a rate limit's Retry-After, llm.Error.RetryAfter) is
// waited for instead, as Temporal does with the activity's next retry
// delay.
func (r Retry) Next(step agent.Step, n int, err error) (time.Duration, bool) {
	if n >= r.Attempts() || !Transient(step, err) {
		return 0, false
	}
	var e *llm.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return r.Wait(n), true
}

// Wait is the backoff after attempt n (from 1): Interval × Backoff^(n-1),
// at most MaxInterval, as Temporal computes it for an activity.
func (r Retry) Wait(n int) time.Duration {
	backoff := max(r.Backoff, 1)
	wait := float64(r.Interval) * math.Pow(backoff, float64(n-1))
	limit := max(r.MaxInterval, r.Interval)
	if wait >= float64(limit) || math.IsInf(wait, 0) {
		return limit
	}
	return time.Duration(wait)
}

// Text is Describe: the policy's words for a failure.
func (r Retry) Text(err error) string { return Describe(err) }

// Transient reports whether a step's failure may succeed when the step
// runs again. As on Temporal (activities, workflows' retry policies):
//
//	model step  the llm error class is retryable (RateLimit, ServerError,
//	            NetworkError, Timeout); an unclassified error is a
//	            NetworkError
//	read step   any failure
//	write step  never: a write that started and has no result is settled
//	            by the journal's guard, never run again blindly
//
// Missing or damaged content (*ContentError), an approval rule that
// decided nothing (*RuleError) and a cancelled step (the run was
// cancelled, the process stops) are never transient.
func Transient(step agent.Step, err error) bool {
	var ce *ContentError
	var re *RuleError
	switch {
	case err == nil, errors.As(err, &ce), errors.As(err, &re), errors.Is(err, context.Canceled):
		return false
	case step.Kind == agent.KindModel:
		return llm.ClassOf(err).Retryable()
	case step.Kind == agent.KindRead:
		return true
	}
	return false
}

// urlError matches the text of a *url.Error: Op "URL": cause.
var urlError = regexp.MustCompile(`^([A-Z][a-z]+) "([^"]+)": (.+)$`)

// Describe says what a step's failure was, in plain words and without the
// process's secrets: a provider's failure as its class and message, with a
// failed connection reduced to its cause and address, e.g.
// "NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions)".
// The text is one line: line breaks a server put in its message become
// spaces.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	var e *llm.Error
	if errors.As(err, &e) {
		text = e.Error()
		if m := urlError.FindStringSubmatch(e.Message); m != nil && e.Class == llm.ClassNetwork && e.StatusCode == 0 {
			cause := m[3]
			if i := strings.LastIndex(cause, ": "); i >= 0 {
				cause = cause[i+2:] // "dial tcp 127.0.0.1:9: connect: connection refused" -> "connection refused"
			}
			text = fmt.Sprintf("%s: %s (%s)", e.Class, cause, m[2])
		}
	}
	return strings.Join(strings.Fields(secret.Scrub(text)), " ")
}
