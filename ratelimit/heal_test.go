package ratelimit

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

var year2999 = time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)

// TestSecondsSaturates: a wait too long for a Duration reads as the
// longest one, never as "1 s" (an overflow).
func TestSecondsSaturates(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "1 s", time.Millisecond: "1 s", time.Second: "1 s", 1001 * time.Millisecond: "2 s",
		math.MaxInt64: "9223372037 s", -time.Hour: "1 s",
	} {
		if got := Seconds(d); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", d, got, want)
		}
	}
	if s := (Wait{Pool: "openai", Until: year2999}).At(t0); s != "waiting for the openai rate limit, next slot in 9223372037 s" {
		t.Errorf("a wait until 2999 reads %q", s)
	}
}

// TestLimiterStaysWithinReach: whatever its callers ask (a pause of 1000
// hours, a call of a trillion tokens that then used more, a horizon of
// 1000 hours), a Limiter sets no time its own check would call damage.
func TestLimiterStaysWithinReach(t *testing.T) {
	m := &MemStore{}
	lim := &Limiter{Store: m, Now: func() time.Time { return t0 }}
	l := Limit{Pool: "p", RequestsPerMinute: 1, TokensPerMinute: 1000}
	tk, err := lim.Take(t.Context(), l, 1e12, 1000*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := lim.Settle(t.Context(), tk, 1e15); err != nil {
		t.Fatal(err)
	}
	if err := lim.Pause(t.Context(), l, 1000*time.Hour); err != nil {
		t.Fatal(err)
	}
	var s State
	_ = m.Update(t.Context(), "p", func(st *State) error { s = *st; return nil })
	if d := s.Token.Sub(t0); d > Ahead+minute {
		t.Errorf("a call of a trillion tokens holds the pool %v; want at most a minute (%v) past its slot", d, minute)
	}
	if d := s.Paused.Sub(t0); d < MaxPause || d > MaxPause+MaxJitter {
		t.Errorf("a pause of 1000 h holds the pool %v; want MaxPause (%v) and its jitter", d, MaxPause)
	}
	if bad := s.damaged(t0); bad.field != "" {
		t.Errorf("the Limiter's own state %+v is damage at its own clock: %+v", s, bad)
	}
	// Another host's clock a little ahead is honoured, not damage.
	if bad := s.damaged(t0.Add(-clockSkew + time.Second)); bad.field != "" {
		t.Errorf("a state from a clock %v ahead is damage: %+v", clockSkew-time.Second, bad)
	}
}

// TestPauseHealsDamage: a Pause on a damaged pool starts it afresh (the
// 2999 pause is gone, the new one is kept) and logs one line.
func TestPauseHealsDamage(t *testing.T) {
	m := &MemStore{}
	_ = m.Update(t.Context(), "p", func(st *State) error { st.Paused = year2999; return nil })
	var logs bytes.Buffer
	lim := &Limiter{Store: m, Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := lim.Pause(t.Context(), Limit{Pool: "p", RequestsPerMinute: 60}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var s State
	_ = m.Update(t.Context(), "p", func(st *State) error { s = *st; return nil })
	if d := s.Paused.Sub(t0); d < 10*time.Second || d > 11*time.Second {
		t.Errorf("paused %v after a 10 s pause on a damaged pool; want 10 s and its jitter", d)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "field=paused") || !strings.Contains(logs.String(), "store=memory") {
		t.Errorf("logged %q; want one line naming the paused field and the store", logs.String())
	}
}
