package llm

import (
	"errors"
	"fmt"
	"time"
)

// Class sorts provider failures by what the engine should do with them.
// The strings are stable: the Temporal activities use them as error types.
type Class string

// The error classes.
const (
	ClassRateLimit     Class = "RateLimit"      // retryable, after RetryAfter if set
	ClassServer        Class = "ServerError"    // retryable
	ClassNetwork       Class = "NetworkError"   // retryable
	ClassTimeout       Class = "Timeout"        // retryable: no answer within the request timeout
	ClassBadRequest    Class = "BadRequest"     // not retryable
	ClassAuth          Class = "Authentication" // not retryable
	ClassNotFound      Class = "ModelNotFound"  // not retryable
	ClassContextLength Class = "ContextTooLong" // not retryable
)

// Retryable reports whether a failure of this class may succeed when tried
// again.
func (c Class) Retryable() bool {
	return c == ClassRateLimit || c == ClassServer || c == ClassNetwork || c == ClassTimeout
}

// Error is a classified provider failure. Message never holds a key.
type Error struct {
	Class      Class
	Message    string
	StatusCode int           // HTTP status, when there was one
	RetryAfter time.Duration // from a Retry-After header, when there was one
}

func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Class, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Class, e.Message)
}

// ClassOf returns the class of err, and ClassNetwork for an unclassified
// error (a failure that never produced an answer).
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassNetwork
}
