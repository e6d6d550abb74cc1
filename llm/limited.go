package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/ratelimit"
)

// A limited provider's waits.
const (
	// MaxLimitWait bounds how long a call waits for its pool's slot when
	// its context has no deadline (the local engine): a slot further off
	// fails the attempt as a rate limit, which the engine retries.
	MaxLimitWait = ratelimit.MaxHorizon
	// limitMargin is kept free before a context's deadline, beyond the
	// request's own Timeout.
	limitMargin = 5 * time.Second
	// defaultPause is how long a 429 without a Retry-After pauses the pool.
	defaultPause = 2 * time.Second
	// defaultReplyEstimate is a reply's estimated tokens when no max_tokens
	// caps it; maxReplyEstimate bounds the estimate of a larger cap. The
	// reply's real count corrects it.
	defaultReplyEstimate = 512
	maxReplyEstimate     = 4096
)

// Limited returns p with every call paced by lim in l's pool: each waits
// for its slot (ratelimit.Limiter.Take) with its estimated tokens, which
// the reply's usage then corrects; a 429 pauses the whole pool for the
// provider's Retry-After and the call takes a later slot, without failing;
// an answer whose rate-limit headers say a limit is used up pauses the pool
// until one more call's worth of it is back (Left).
// A call whose slot lies past its context's deadline (less the request
// timeout), or past MaxLimitWait, fails with a ClassRateLimit error
// whose RetryAfter is the slot. A p that streams still does.
func Limited(p Provider, lim *ratelimit.Limiter, l ratelimit.Limit, o Options) Provider {
	lp := limited{Provider: p, lim: lim, l: l, timeout: cmp.Or(o.Timeout, DefaultTimeout),
		reply: min(cmp.Or(o.Settings.MaxTokens, o.Account.MaxTokens, defaultReplyEstimate), maxReplyEstimate)}
	if s, ok := p.(Streamer); ok {
		return limitedStreamer{lp, s}
	}
	return lp
}

type limited struct {
	Provider
	lim     *ratelimit.Limiter
	l       ratelimit.Limit
	timeout time.Duration
	reply   int64 // a reply's estimated tokens
}

func (p limited) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	return p.call(ctx, req, func(ctx context.Context) (agent.ModelReply, error) { return p.Provider.Complete(ctx, req) })
}

type limitedStreamer struct {
	limited
	s Streamer
}

func (p limitedStreamer) Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error) {
	return p.call(ctx, req, func(ctx context.Context) (agent.ModelReply, error) { return p.s.Stream(ctx, req, text) })
}

// EstimateTokens estimates a request's input tokens: about four bytes of
// its messages and tools as JSON each (what the providers' own rules of
// thumb say).
func EstimateTokens(req agent.ModelRequest) int64 {
	b, err := json.Marshal(req)
	if err != nil {
		return 1
	}
	return max(int64(len(b)+3)/4, 1)
}

func (p limited) call(ctx context.Context, req agent.ModelRequest, do func(context.Context) (agent.ModelReply, error)) (agent.ModelReply, error) {
	est := EstimateTokens(req) + p.reply
	for {
		t, err := p.lim.Take(ctx, p.l, est, p.horizon(ctx))
		if err != nil {
			var no *ratelimit.NoSlotError
			if errors.As(err, &no) {
				return agent.ModelReply{}, &Error{Class: ClassRateLimit, RetryAfter: min(time.Until(no.At), MaxRetryAfter),
					Message: fmt.Sprintf("%s (%s): no slot before this attempt's deadline; the next is in %s", no.Error(), p.l, ratelimit.Seconds(time.Until(no.At)))}
			}
			if ctx.Err() != nil {
				return agent.ModelReply{}, err
			}
			return agent.ModelReply{}, &Error{Class: ClassNetwork, Message: "rate limit: " + err.Error()}
		}
		var left *Left
		r, err := do(withLeft(ctx, func(l Left) { left = &l }))
		var e *Error
		if errors.As(err, &e) && e.Class == ClassRateLimit {
			// The provider counted nothing: give the tokens back, hold
			// the whole pool for what it asked, and take a later slot.
			_ = p.lim.Settle(context.WithoutCancel(ctx), t, 0)
			if perr := p.lim.Pause(ctx, p.l, cmp.Or(e.RetryAfter, defaultPause)); perr != nil {
				return r, err
			}
			continue
		}
		if err == nil {
			_ = p.lim.Settle(context.WithoutCancel(ctx), t, r.Usage.Total())
		}
		// The provider says a limit is used up (its account may serve
		// others too): hold the pool until it comes back, before a 429.
		if left != nil {
			if d := left.spent(est); d > 0 {
				_ = p.lim.Pause(context.WithoutCancel(ctx), p.l, d)
			}
		}
		return r, err
	}
}

// horizon is how long a call may wait for its slot: until ctx's deadline
// less the request's own timeout and a margin, or MaxLimitWait.
func (p limited) horizon(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return MaxLimitWait
	}
	return min(time.Until(dl)-p.timeout-limitMargin, MaxLimitWait)
}
