package llm

import (
	"context"
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

// NoteLeft tells ctx's function, which Limited puts there, what a
// provider's rate-limit headers said is left after a request; nothing
// without one. The HTTP providers call it with each answer they get.
func NoteLeft(ctx context.Context, l Left) {
	if fn, _ := ctx.Value(leftKey{}).(func(Left)); fn != nil {
		fn(l)
	}
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
