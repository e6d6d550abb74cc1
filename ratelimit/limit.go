package ratelimit

import (
	"fmt"
	"regexp"
	"time"
)

// Limit is a pool's rate limits.
type Limit struct {
	// Pool names the limits' shared state: models that declare the same
	// pool share one account's limits. Default "": the provider's name.
	Pool string `json:"pool,omitempty"`
	// RequestsPerMinute bounds the pool's calls in any minute. Default 0:
	// no bound on requests.
	RequestsPerMinute int64 `json:"requests_per_minute,omitempty"`
	// TokensPerMinute bounds the pool's tokens (input and output) in any
	// minute. Default 0: no bound on tokens.
	TokensPerMinute int64 `json:"tokens_per_minute,omitempty"`
}

// poolName is what a pool may be called: it names a file.
var poolName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// PoolFormat says what a pool name may be, for errors.
const PoolFormat = "lowercase letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit"

// CheckPool checks a pool name.
func CheckPool(name string) error {
	if !poolName.MatchString(name) {
		return fmt.Errorf("pool %q: want %s", name, PoolFormat)
	}
	return nil
}

// String renders the limits for people, e.g. "60 requests and 40000
// tokens per minute (pool openai)".
func (l Limit) String() string {
	var s string
	switch {
	case l.RequestsPerMinute > 0 && l.TokensPerMinute > 0:
		s = fmt.Sprintf("%d requests and %d tokens per minute", l.RequestsPerMinute, l.TokensPerMinute)
	case l.RequestsPerMinute > 0:
		s = fmt.Sprintf("%d requests per minute", l.RequestsPerMinute)
	default:
		s = fmt.Sprintf("%d tokens per minute", l.TokensPerMinute)
	}
	return s + " (pool " + l.Pool + ")"
}

// Headroom is the share of the declared limits the pool is paced at: a
// call reaches the provider a little after its slot, by a latency that
// varies from call to call, and calls paced at exactly the limit would
// then now and again arrive closer together than it allows.
const Headroom = 39.0 / 40 // 97.5 %

// minute is the pool's minute: a minute over Headroom.
const minute = time.Minute * 40 / 39

// requestGap is how far apart the pool's requests go; 0: no bound.
func (l Limit) requestGap() time.Duration {
	if l.RequestsPerMinute <= 0 {
		return 0
	}
	return minute / time.Duration(l.RequestsPerMinute)
}

// tokenTime is how long n tokens hold the pool, at most a minute (a
// provider refuses a request of more tokens than its minute allows, and
// remembers no more than a minute of them); 0: no bound.
func (l Limit) tokenTime(n int64) time.Duration {
	if l.TokensPerMinute <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(min(float64(n)/float64(l.TokensPerMinute), 1) * float64(minute))
}

// gap is how long one call of tokens estimated tokens holds the pool: the
// longer of its request's gap and its tokens' time.
func (l Limit) gap(tokens int64) time.Duration {
	return max(l.requestGap(), l.tokenTime(tokens))
}

// State is a pool's shared state, as a store keeps it (JSON).
type State struct {
	// Request is when the pool's next request may go.
	Request time.Time `json:"request,omitzero"`
	// Token is when the pool's next token may go.
	Token time.Time `json:"token,omitzero"`
	// Paused is until when the provider asked the pool to wait (a 429's
	// Retry-After, with jitter).
	Paused time.Time `json:"paused,omitzero"`
	// Waiting holds the callers waiting for a slot they have not reserved
	// yet, each until when its entry lasts unless renewed: how many wait
	// is what a caller's notice counts ahead of it.
	Waiting map[string]time.Time `json:"waiting,omitempty"`
}

// prune drops the entries of Waiting that have expired by now.
func (s *State) prune(now time.Time) {
	for id, until := range s.Waiting {
		if until.Before(now) {
			delete(s.Waiting, id)
		}
	}
}

// next is the first instant at or after now the pool lets a call go.
func (s State) next(now time.Time) time.Time {
	at := now
	for _, t := range []time.Time{s.Request, s.Token, s.Paused} {
		if t.After(at) {
			at = t
		}
	}
	return at
}

// reserve reserves a call of tokens estimated tokens at the pool's next
// slot, if that is no later than latest; it reports the slot either way.
func (s *State) reserve(l Limit, now time.Time, tokens int64, latest time.Time) (time.Time, bool) {
	at := s.next(now)
	if at.After(latest) {
		return at, false
	}
	s.Request = at.Add(l.requestGap())
	s.Token = at.Add(l.tokenTime(tokens))
	return at, true
}

// settle corrects the pool for a call that used used tokens where
// estimated were reserved; the pool's next token stays within paceReach
// of now (the call went at its slot, at most now).
func (s *State) settle(l Limit, estimated, used int64, now time.Time) {
	if s.Token.IsZero() || used == estimated {
		return
	}
	if used > estimated {
		s.Token = s.Token.Add(l.tokenTime(used - estimated))
	} else {
		s.Token = s.Token.Add(-l.tokenTime(estimated - used))
	}
	if latest := now.Add(Ahead + minute); s.Token.After(latest) {
		s.Token = latest
	}
}
