package providerfake

import "time"

// limiter counts the answered requests and their tokens over a sliding
// window: a request is admitted when fewer than rpm requests, and no more
// than tpm minus its own tokens, were answered within the window before
// it. It is not safe for concurrent use (the Server holds its lock).
type limiter struct {
	rpm, tpm int64
	window   time.Duration
	events   []event // answered requests, oldest first, all within the window
}

type event struct {
	at      time.Time
	in, out int64
}

// usage is the state of the limits at one instant, after the request
// being answered if it was admitted.
type usage struct {
	requests, tokens, inTokens, outTokens int64
	// resetRequests and resetTokens are how long until the limits are
	// whole again: until the newest counted event leaves the window.
	resetRequests, resetTokens time.Duration
}

// refusal says why a request was refused and when to try again.
type refusal struct {
	kind string // "requests" or "tokens" (OpenAI's error types)
	// wait is how long until the next slot frees; 0 when the request
	// asks for more tokens than the whole limit and can never be served.
	wait time.Duration
}

func (l *limiter) prune(now time.Time) {
	i := 0
	for i < len(l.events) && !now.Before(l.events[i].at.Add(l.window)) {
		i++
	}
	l.events = l.events[i:]
}

// admit counts a request of in input and out output tokens at now, or
// refuses it. Either way it returns the limits' state after it.
func (l *limiter) admit(now time.Time, in, out int64) (*refusal, usage) {
	l.prune(now)
	need := in + out
	var tokens int64
	for _, e := range l.events {
		tokens += e.in + e.out
	}
	var r *refusal
	switch {
	case int64(len(l.events)) >= l.rpm:
		r = &refusal{kind: "requests", wait: l.events[int64(len(l.events))-l.rpm].at.Add(l.window).Sub(now)}
	case need > l.tpm:
		r = &refusal{kind: "tokens"}
	case tokens+need > l.tpm:
		// The oldest events leave the window first: wait for the one
		// whose leaving makes room.
		free := tokens + need - l.tpm
		for _, e := range l.events {
			free -= e.in + e.out
			if free <= 0 {
				r = &refusal{kind: "tokens", wait: e.at.Add(l.window).Sub(now)}
				break
			}
		}
	default:
		l.events = append(l.events, event{at: now, in: in, out: out})
	}
	return r, l.usage(now)
}

func (l *limiter) usage(now time.Time) usage {
	u := usage{requests: int64(len(l.events))}
	for _, e := range l.events {
		u.inTokens += e.in
		u.outTokens += e.out
	}
	u.tokens = u.inTokens + u.outTokens
	if n := len(l.events); n > 0 {
		reset := l.events[n-1].at.Add(l.window).Sub(now)
		u.resetRequests, u.resetTokens = reset, reset
	}
	return u
}
