package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// lockPoll is how often FileStore tries a lock another process holds.
const lockPoll = 2 * time.Millisecond

// NoticeAfter is the shortest wait a Limiter tells its caller of (Waits):
// shorter ones pass unremarked.
const NoticeAfter = time.Second

// MaxJitter bounds the jitter a pause adds to the provider's wait.
const MaxJitter = 5 * time.Second

// Limiter reserves calls' slots in the pools of a Store.
type Limiter struct {
	// Store keeps the pools' states. Required.
	Store Store
	// Now is the clock. Default nil: time.Now.
	Now func() time.Time
}

// Wait tells a caller that its call waits for a pool.
type Wait struct {
	Pool string
	// Until is the call's slot.
	Until time.Time
	// Paused says the provider asked the pool to wait (a 429), rather
	// than the declared limits.
	Paused bool
}

// String renders the wait for people, e.g. "waiting for the openai rate
// limit, next slot in 12 s".
func (w Wait) String() string { return w.At(time.Now()) }

// At renders the wait as seen at now.
func (w Wait) At(now time.Time) string {
	why := "rate limit"
	if w.Paused {
		why = "rate limit (the provider asked to wait)"
	}
	return fmt.Sprintf("waiting for the %s %s, next slot in %s", w.Pool, why, Seconds(w.Until.Sub(now)))
}

// Seconds renders a wait in whole seconds, at least 1: "12 s".
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", max(int64((d+time.Second-1)/time.Second), 1))
}

// NoSlotError is Take's error when the pool's next slot lies past the
// caller's horizon: nothing was reserved.
type NoSlotError struct {
	Pool string
	At   time.Time // the pool's next slot when Take looked
}

func (e *NoSlotError) Error() string {
	return fmt.Sprintf("the %s rate limit has no slot before %s", e.Pool, e.At.UTC().Format(time.RFC3339))
}

// Ticket is a reserved call, for Settle.
type Ticket struct {
	Limit  Limit
	Tokens int64 // estimated
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

type waitsKey struct{}

// WithWaits returns ctx carrying fn, which a Limiter tells of every wait
// of NoticeAfter or longer before it begins.
func WithWaits(ctx context.Context, fn func(Wait)) context.Context {
	return context.WithValue(ctx, waitsKey{}, fn)
}

func waits(ctx context.Context) func(Wait) {
	fn, _ := ctx.Value(waitsKey{}).(func(Wait))
	return fn
}

// Take reserves a call of tokens estimated tokens in lim's pool, no later
// than horizon from now, and waits for its slot; ctx's end ends the wait
// with its error. A pause of the pool set while it waits (another caller
// got a 429) sends it back for a later slot. A slot past the horizon is
// not reserved: Take returns a *NoSlotError.
func (l *Limiter) Take(ctx context.Context, lim Limit, tokens int64, horizon time.Duration) (Ticket, error) {
	t := Ticket{Limit: lim, Tokens: tokens}
	for {
		now := l.now()
		var at time.Time
		var ok, paused bool
		err := l.Store.Update(ctx, lim.Pool, func(s *State) error {
			at, ok = s.reserve(lim, now, tokens, now.Add(horizon))
			paused = !s.Paused.IsZero() && !s.Paused.Before(at)
			return nil
		})
		if err != nil {
			return t, err
		}
		if !ok {
			return t, &NoSlotError{Pool: lim.Pool, At: at}
		}
		if at.Sub(now) >= NoticeAfter {
			if fn := waits(ctx); fn != nil {
				fn(Wait{Pool: lim.Pool, Until: at, Paused: paused})
			}
		}
		if !at.After(now) {
			return t, nil // no wait: no pause came in between
		}
		if err := sleep(ctx, at.Sub(l.now())); err != nil {
			return t, err
		}
		// Did someone get a 429 meanwhile?
		var until time.Time
		if err := l.Store.Update(ctx, lim.Pool, func(s *State) error { until = s.Paused; return nil }); err != nil {
			return t, err
		}
		if !until.After(l.now()) {
			return t, nil
		}
		// The slot fell inside a pause: take a later one (the pool's pace
		// moved past the pause with it).
	}
}

// Settle corrects the pool for t's call, which used used tokens.
func (l *Limiter) Settle(ctx context.Context, t Ticket, used int64) error {
	if t.Limit.TokensPerMinute <= 0 || used == t.Tokens {
		return nil
	}
	return l.Store.Update(ctx, t.Limit.Pool, func(s *State) error {
		s.settle(t.Limit, t.Tokens, used)
		return nil
	})
}

// Pause makes the whole pool wait d from now (a provider's Retry-After),
// plus a random tenth of d more, at most MaxJitter, so that the callers it
// holds do not all come back at one instant. A pause never shortens one
// already set.
func (l *Limiter) Pause(ctx context.Context, lim Limit, d time.Duration) error {
	until := l.now().Add(d + jitter(d))
	return l.Store.Update(ctx, lim.Pool, func(s *State) error {
		if until.After(s.Paused) {
			s.Paused = until
		}
		return nil
	})
}

func jitter(d time.Duration) time.Duration {
	j := min(d/10, MaxJitter)
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsNoSlot reports whether err is a *NoSlotError.
func IsNoSlot(err error) bool {
	var e *NoSlotError
	return errors.As(err, &e)
}
