package providers

import (
	"github.com/agentrun/agentrun/llm"

	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// How long a server asks a client to wait before it tries again.

// retryAfter reads how long the server asks the client to wait: the
// retry-after-ms header (milliseconds), else Retry-After in seconds or as
// an HTTP date, at most llm.MaxRetryAfter. Zero means no (usable) header.
func retryAfter(h http.Header, now time.Time) time.Duration {
	return min(rawRetryAfter(h, now), llm.MaxRetryAfter)
}

func rawRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(math.MaxInt64/int64(time.Millisecond)) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < float64(math.MaxInt64/int64(time.Second)) {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
