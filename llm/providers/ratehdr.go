package providers

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/llm"
)

// noteLeft tells ctx's function (llm.NoteLeft) what res's headers say.
func noteLeft(ctx context.Context, res *http.Response) {
	if res == nil {
		return
	}
	if l, ok := parseLeft(res.Header, time.Now()); ok {
		llm.NoteLeft(ctx, l)
	}
}

// parseLeft reads OpenAI's x-ratelimit-* headers (resets as durations,
// "6m0s", "12ms") and Anthropic's anthropic-ratelimit-* (resets as RFC 3339
// times); ok is false when h has neither.
func parseLeft(h http.Header, now time.Time) (llm.Left, bool) {
	l := llm.Left{Requests: -1, RequestLimit: -1, Tokens: -1, TokenLimit: -1}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(h.Get(k)), 10, 64)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	if h.Get("x-ratelimit-remaining-requests") != "" || h.Get("x-ratelimit-remaining-tokens") != "" {
		l.Requests, l.RequestLimit = num("x-ratelimit-remaining-requests"), num("x-ratelimit-limit-requests")
		l.Tokens, l.TokenLimit = num("x-ratelimit-remaining-tokens"), num("x-ratelimit-limit-tokens")
		l.RequestReset = duration(h.Get("x-ratelimit-reset-requests"))
		l.TokenReset = duration(h.Get("x-ratelimit-reset-tokens"))
		return l, true
	}
	if h.Get("anthropic-ratelimit-requests-remaining") != "" || h.Get("anthropic-ratelimit-tokens-remaining") != "" {
		l.Requests, l.RequestLimit = num("anthropic-ratelimit-requests-remaining"), num("anthropic-ratelimit-requests-limit")
		l.Tokens, l.TokenLimit = num("anthropic-ratelimit-tokens-remaining"), num("anthropic-ratelimit-tokens-limit")
		l.RequestReset = until(h.Get("anthropic-ratelimit-requests-reset"), now)
		l.TokenReset = until(h.Get("anthropic-ratelimit-tokens-reset"), now)
		return l, true
	}
	return l, false
}

// duration parses OpenAI's reset form; 0 for anything else.
func duration(s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0
	}
	return min(d, llm.MaxRetryAfter)
}

// until parses an RFC 3339 time as the wait from now; 0 for anything else.
func until(s string, now time.Time) time.Duration {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil || !t.After(now) {
		return 0
	}
	return min(t.Sub(now), llm.MaxRetryAfter)
}
