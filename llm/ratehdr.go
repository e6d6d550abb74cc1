package llm

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Left is what a provider's rate-limit headers say is left of its limits
// after a request: the requests and tokens remaining, each limit, and how
// long until each is whole again. A field the headers do not give is -1
// (counts) or 0 (durations).
type Left struct {
	Requests, RequestLimit int64
	Tokens, TokenLimit     int64
	RequestReset           time.Duration
	TokenReset             time.Duration
}

type leftKey struct{}

// withLeft returns ctx carrying fn, which the providers call with the
// rate-limit headers of each answer they get (Limited reads them).
func withLeft(ctx context.Context, fn func(Left)) context.Context {
	return context.WithValue(ctx, leftKey{}, fn)
}

// noteLeft tells ctx's function (withLeft) what res's headers say.
func noteLeft(ctx context.Context, res *http.Response) {
	fn, _ := ctx.Value(leftKey{}).(func(Left))
	if fn == nil || res == nil {
		return
	}
	if l, ok := parseLeft(res.Header, time.Now()); ok {
		fn(l)
	}
}

// parseLeft reads OpenAI's x-ratelimit-* headers (resets as durations,
// "6m0s", "12ms") and Anthropic's anthropic-ratelimit-* (resets as RFC 3339
// times); ok is false when h has neither.
func parseLeft(h http.Header, now time.Time) (Left, bool) {
	l := Left{Requests: -1, RequestLimit: -1, Tokens: -1, TokenLimit: -1}
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
	return min(d, MaxRetryAfter)
}

// until parses an RFC 3339 time as the wait from now; 0 for anything else.
func until(s string, now time.Time) time.Duration {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil || !t.After(now) {
		return 0
	}
	return min(t.Sub(now), MaxRetryAfter)
}

// spent is how long the pool should wait when the headers say a limit is
// used up: until one more call's worth of it is back. A reset is the time
// until the whole limit is back (OpenAI's rule; the fake's too), so a
// share of it: reset × (needed − remaining) / (limit − remaining), for one
// request and for tokens calls' estimated tokens; the whole reset when
// the limit is not given. 0: enough is left.
func (l Left) spent(tokens int64) time.Duration {
	share := func(reset time.Duration, remaining, limit, need int64) time.Duration {
		if limit > remaining {
			return time.Duration(float64(reset) * float64(min(need, limit)-remaining) / float64(limit-remaining))
		}
		return reset
	}
	var d time.Duration
	if l.Requests == 0 && l.RequestReset > 0 {
		d = share(l.RequestReset, 0, l.RequestLimit, 1)
	}
	if l.Tokens >= 0 && l.Tokens < tokens && l.TokenReset > 0 {
		d = max(d, share(l.TokenReset, l.Tokens, l.TokenLimit, tokens))
	}
	return d
}
