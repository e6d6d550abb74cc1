package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// lockPoll is how often FileStore tries a lock another process holds.
const lockPoll = 2 * time.Millisecond

// NoticeAfter is the shortest wait a Limiter tells its caller of (Waits):
// shorter ones pass unremarked.
const NoticeAfter = time.Second

// Ahead is how far ahead a caller reserves its slot: a caller whose slot
// would be further off waits unreserved and looks again, so that the slots
// a dead caller reserved cost the pool at most Ahead of its pace.
const Ahead = time.Second

// MaxLate is how late after its slot a call may still go: one that wakes
// later (its process was stopped, e.g. SIGSTOP, or starved) takes a new
// slot rather than join the calls reserved after its own.
const MaxLate = 500 * time.Millisecond

// MaxJitter bounds the jitter a pause adds to the provider's wait.
const MaxJitter = 5 * time.Second

// Limiter reserves calls' slots in the pools of a Store.
type Limiter struct {
	// Store keeps the pools' states. Required.
	Store Store
	// Now is the clock. Default nil: time.Now.
	Now func() time.Time
	// Logger gets the line that says a pool's state was damaged and
	// started afresh. Default nil: slog.Default().
	Logger *slog.Logger
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

// Seconds renders a wait in whole seconds, rounded up, at least 1: "12 s".
// It cannot overflow: the longest Duration is "9223372037 s".
func Seconds(d time.Duration) string {
	s := d / time.Second
	if d%time.Second > 0 {
		s++
	}
	return fmt.Sprintf("%d s", max(int64(s), 1))
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
// with its error. It reserves a slot only once it is at most Ahead away
// (until then it looks again now and then), so that a caller that dies
// wastes little of the pool. A pause of the pool set while it waits
// (another caller got a 429) sends it back for a later slot, as does a
// wake more than MaxLate past its slot. A slot past the horizon is not
// reserved: Take returns a *NoSlotError. A horizon over MaxHorizon is
// MaxHorizon.
func (l *Limiter) Take(ctx context.Context, lim Limit, tokens int64, horizon time.Duration) (Ticket, error) {
	t := Ticket{Limit: lim, Tokens: tokens}
	id := waiterID()
	latest := l.now().Add(min(horizon, MaxHorizon))
	told := false
	for {
		now := l.now()
		var at time.Time
		var ok, paused bool
		var others int
		var nap time.Duration
		err := l.update(ctx, lim.Pool, now, func(s *State) error {
			s.prune(now)
			at = s.next(now)
			paused = !s.Paused.IsZero() && !s.Paused.Before(at)
			others = len(s.Waiting)
			if _, ok := s.Waiting[id]; ok {
				others--
			}
			if at.After(latest) {
				delete(s.Waiting, id)
				return nil
			}
			if at, ok = s.reserve(lim, now, tokens, now.Add(Ahead)); ok {
				delete(s.Waiting, id)
				return nil
			}
			// Look again when the pool's next slot is near, give or take
			// Ahead, so that the callers that wait do not all look at once;
			// the entry lasts until a little after that look.
			nap = min(at.Sub(now)-Ahead+rand.N(Ahead), latest.Sub(now))
			if _, known := s.Waiting[id]; known || len(s.Waiting) < MaxWaiting {
				if s.Waiting == nil {
					s.Waiting = map[string]time.Time{}
				}
				s.Waiting[id] = now.Add(nap + waiterGrace)
			}
			return nil
		})
		if err != nil {
			return t, err
		}
		if at.After(latest) {
			return t, &NoSlotError{Pool: lim.Pool, At: at.Add(time.Duration(others) * lim.gap(tokens))}
		}
		if !told {
			// Others waiting unreserved go before or after this call, in no
			// set order: count half of them ahead of it.
			until := at
			if !ok {
				until = at.Add(time.Duration(others) * lim.gap(tokens) / 2)
			}
			if until.Sub(now) >= NoticeAfter {
				told = true
				if fn := waits(ctx); fn != nil {
					fn(Wait{Pool: lim.Pool, Until: until, Paused: paused})
				}
			}
		}
		if !ok {
			if err := sleep(ctx, nap); err != nil {
				l.leave(lim.Pool, id)
				return t, err
			}
			continue
		}
		if !at.After(now) {
			return t, nil // no wait: no pause came in between
		}
		if err := sleep(ctx, at.Sub(l.now())); err != nil {
			return t, err
		}
		woke := l.now()
		if woke.Sub(at) > MaxLate {
			// The process was frozen (or starved) past its slot: going now
			// would bunch it with the calls reserved since. Take a new one.
			continue
		}
		// Did someone get a 429 meanwhile?
		var until time.Time
		if err := l.update(ctx, lim.Pool, woke, func(s *State) error { until = s.Paused; return nil }); err != nil {
			return t, err
		}
		if !until.After(l.now()) {
			return t, nil
		}
		// The slot fell inside a pause: take a later one (the pool's pace
		// moved past the pause with it).
	}
}

// MaxWaiting bounds a pool's Waiting: past it, more callers wait
// uncounted (the notices' count of those ahead stays at MaxWaiting), so
// that a pool's state stays small however many calls wait for it. A Store
// keeps a state of MaxWaiting callers whole.
const MaxWaiting = 5000

// waiterGrace is how long past its next look a waiter's entry in a pool's
// Waiting lasts: an entry not renewed by then is a caller that died.
const waiterGrace = 2 * time.Second

// leave removes waiter id from pool's Waiting, best effort (its caller's
// context has ended; the entry would expire anyway).
func (l *Limiter) leave(pool, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.Store.Update(ctx, pool, func(s *State) error {
		delete(s.Waiting, id)
		return nil
	})
}

func waiterID() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// Settle corrects the pool for t's call, which used used tokens.
func (l *Limiter) Settle(ctx context.Context, t Ticket, used int64) error {
	if t.Limit.TokensPerMinute <= 0 || used == t.Tokens {
		return nil
	}
	now := l.now()
	return l.update(ctx, t.Limit.Pool, now, func(s *State) error {
		s.settle(t.Limit, t.Tokens, used, now)
		return nil
	})
}

// Pause makes the whole pool wait d from now (a provider's Retry-After),
// plus a random tenth of d more, at most MaxJitter, so that the callers it
// holds do not all come back at one instant. A pause never shortens one
// already set. A d over MaxPause is MaxPause.
func (l *Limiter) Pause(ctx context.Context, lim Limit, d time.Duration) error {
	d = min(d, MaxPause)
	now := l.now()
	until := now.Add(d + jitter(d))
	return l.update(ctx, lim.Pool, now, func(s *State) error {
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
