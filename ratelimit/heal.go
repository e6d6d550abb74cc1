package ratelimit

import (
	"context"
	"log/slog"
	"time"
)

// How far ahead of its clock a Limiter sets a pool's times; a stored time
// further ahead than that, give or take clockSkew, is damage (a host whose
// clock ran ahead, a bad edit): the pool starts afresh.
const (
	// MaxPause bounds a pause (Pause), as llm.MaxRetryAfter bounds a
	// provider's Retry-After.
	MaxPause = 5 * time.Minute
	// MaxHorizon bounds a caller's horizon (Take), as llm.MaxLimitWait
	// bounds a call's wait.
	MaxHorizon = 15 * time.Minute
	// clockSkew is how far the clocks of the hosts that share a pool may
	// disagree: a time up to this much further ahead is honoured.
	clockSkew = time.Minute
	// paceReach bounds Request and Token: a slot is reserved at most Ahead
	// away, and a call holds the pool at most a minute (tokenTime).
	paceReach = Ahead + minute + clockSkew
	// pauseReach bounds Paused: a pause and its jitter.
	pauseReach = MaxPause + MaxJitter + clockSkew
	// waitReach bounds an entry of Waiting: a look, at most a horizon
	// away, and its grace.
	waitReach = MaxHorizon + waiterGrace + clockSkew
)

// damage is a pool's time further ahead than a Limiter sets it.
type damage struct {
	field string // "" for none
	at    time.Time
	reach time.Duration
}

// damaged returns the first of s's times that lies further ahead of now
// than a Limiter sets it, if any.
func (s State) damaged(now time.Time) damage {
	for _, f := range []struct {
		name  string
		at    time.Time
		reach time.Duration
	}{{"request", s.Request, paceReach}, {"token", s.Token, paceReach}, {"paused", s.Paused, pauseReach}} {
		if f.at.Sub(now) > f.reach {
			return damage{f.name, f.at, f.reach}
		}
	}
	for _, until := range s.Waiting {
		if until.Sub(now) > waitReach {
			return damage{"waiting", until, waitReach}
		}
	}
	return damage{}
}

// Locator is a Store that can say where it keeps a pool's state, for the
// line a Limiter logs when it finds the state damaged.
type Locator interface {
	// Locate names where pool's state is kept, e.g. a file's path.
	Locate(pool string) string
}

// update is l.Store.Update of pool with fn, on a state that is sane at
// now: a damaged one starts afresh first, and once the update is kept the
// Limiter logs it, one line naming the pool and where it is kept. The fresh
// state is in the store from then on, so the line comes once per damage.
func (l *Limiter) update(ctx context.Context, pool string, now time.Time, fn func(*State) error) error {
	var bad damage
	err := l.Store.Update(ctx, pool, func(s *State) error {
		if bad = s.damaged(now); bad.field != "" {
			*s = State{}
		}
		return fn(s)
	})
	if err == nil && bad.field != "" {
		l.logDamage(pool, bad)
	}
	return err
}

func (l *Limiter) logDamage(pool string, bad damage) {
	where := "memory"
	if loc, ok := l.Store.(Locator); ok {
		where = loc.Locate(pool)
	}
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("rate limit pool damaged, started afresh: a time further ahead than the limiter sets (a clock ahead, an edit)",
		"pool", pool, "store", where, "field", bad.field, "at", bad.at.UTC().Format(time.RFC3339),
		"max_ahead", bad.reach.String())
}
