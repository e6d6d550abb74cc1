package llm

import (
	"time"
)

// The timeouts of a model request: the whole-answer timeout and, while an
// answer streams, the idle timeout between its pieces.

// DefaultTimeout bounds one model request when no timeout is set
// (AGENTRUN_MODEL_TIMEOUT): a request answered whole, or the whole of a
// streamed answer.
const DefaultTimeout = 2 * time.Minute

// DefaultIdleTimeout bounds each silence of a streamed answer when no idle
// timeout is set (AGENTRUN_MODEL_IDLE_TIMEOUT), but never beyond the
// request timeout.
const DefaultIdleTimeout = time.Minute

// MaxRetryAfter caps the wait a server asks for in Retry-After: a longer
// one (or a date far ahead) is taken as this long, so that a provider
// cannot park a run's model step for hours; Temporal's retry policy then
// tries again.
const MaxRetryAfter = 5 * time.Minute
