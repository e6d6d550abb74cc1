package ratelimit

import (
	"context"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// sec is the pool's second: a second over Headroom.
const sec = time.Second * 40 / 39

// near reports whether a and b are within a microsecond (the pace's
// rounding).
func near(a, b time.Time) bool { d := a.Sub(b); return d < time.Microsecond && d > -time.Microsecond }

func TestReserveSpacesRequests(t *testing.T) {
	l := Limit{Pool: "openai", RequestsPerMinute: 60}
	var s State
	for i := range 10 {
		at, ok := s.reserve(l, t0, 100, t0.Add(time.Hour))
		if want := time.Duration(i) * sec; !ok || !near(at, t0.Add(want)) {
			t.Fatalf("call %d: slot %v (ok %t), want %v", i, at.Sub(t0), ok, want)
		}
	}
	// An idle pool builds no credit: a call long after goes at once, and the
	// next one a gap later.
	late := t0.Add(time.Hour)
	if at, _ := s.reserve(l, late, 1, late.Add(time.Hour)); !near(at, late) {
		t.Fatalf("after an idle hour: slot %v, want now", at.Sub(late))
	}
	if at, _ := s.reserve(l, late, 1, late.Add(time.Hour)); !near(at, late.Add(sec)) {
		t.Fatalf("second call after an idle hour: slot %v, want 1s", at.Sub(late))
	}
}

func TestReserveSpacesTokensAndSettles(t *testing.T) {
	l := Limit{Pool: "anthropic", TokensPerMinute: 6000} // 100 tokens a second
	var s State
	if at, _ := s.reserve(l, t0, 1000, t0.Add(time.Hour)); !near(at, t0) {
		t.Fatalf("first call at %v", at.Sub(t0))
	}
	if at, _ := s.reserve(l, t0, 1000, t0.Add(time.Hour)); !near(at, t0.Add(10*sec)) {
		t.Fatalf("second call at %v, want 10s (1000 tokens at 100/s)", at.Sub(t0))
	}
	// The second call used 500: the pool gets 5 s back.
	s.settle(l, 1000, 500)
	if at, _ := s.reserve(l, t0, 1000, t0.Add(time.Hour)); !near(at, t0.Add(15*sec)) {
		t.Fatalf("third call at %v, want 15s", at.Sub(t0))
	}
	// One that used more holds the pool longer.
	s.settle(l, 1000, 3000)
	if at, _ := s.reserve(l, t0, 1, t0.Add(time.Hour)); !near(at, t0.Add(45*sec)) {
		t.Fatalf("fourth call at %v, want 45s", at.Sub(t0))
	}
}

func TestReserveBothLimitsTheLaterWins(t *testing.T) {
	l := Limit{Pool: "p", RequestsPerMinute: 60, TokensPerMinute: 60_000} // 1 s a request, 1000 tokens a second
	var s State
	s.reserve(l, t0, 5000, t0.Add(time.Hour))
	if at, _ := s.reserve(l, t0, 10, t0.Add(time.Hour)); !near(at, t0.Add(5*sec)) {
		t.Fatalf("after 5000 tokens: %v, want 5s (tokens bind)", at.Sub(t0))
	}
	if at, _ := s.reserve(l, t0, 10, t0.Add(time.Hour)); !near(at, t0.Add(6*sec)) {
		t.Fatalf("then: %v, want 6s (requests bind)", at.Sub(t0))
	}
}

func TestReservePastHorizonKeepsState(t *testing.T) {
	l := Limit{Pool: "p", RequestsPerMinute: 1}
	var s State
	s.reserve(l, t0, 1, t0.Add(time.Hour))
	before := s
	at, ok := s.reserve(l, t0, 1, t0.Add(30*time.Second))
	if ok || !near(at, t0.Add(60*sec)) || s != before {
		t.Fatalf("past the horizon: slot %v ok %t, state changed %t", at.Sub(t0), ok, s != before)
	}
}

func TestPauseHoldsThePool(t *testing.T) {
	m := &MemStore{}
	now := t0
	lim := &Limiter{Store: m, Now: func() time.Time { return now }}
	l := Limit{Pool: "openai", RequestsPerMinute: 600}
	if err := lim.Pause(t.Context(), l, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var s State
	_ = m.Update(t.Context(), "openai", func(st *State) error { s = *st; return nil })
	if d := s.Paused.Sub(now); d < 20*time.Second || d > 22*time.Second {
		t.Fatalf("paused for %v, want 20 s plus at most 2 s of jitter", d)
	}
	// A shorter pause never shortens it.
	if err := lim.Pause(t.Context(), l, time.Second); err != nil {
		t.Fatal(err)
	}
	var again State
	_ = m.Update(t.Context(), "openai", func(st *State) error { again = *st; return nil })
	if !again.Paused.Equal(s.Paused) {
		t.Fatalf("a 1 s pause moved the end from %v to %v", s.Paused.Sub(now), again.Paused.Sub(now))
	}
	// A call now is given the pause's end, and NoSlotError says when.
	_, err := lim.Take(t.Context(), l, 1, 5*time.Second)
	no, ok := err.(*NoSlotError)
	if !ok || !no.At.Equal(s.Paused) {
		t.Fatalf("Take during the pause: %v, want a NoSlotError at the pause's end", err)
	}
}

func TestTakeWaitsAndTells(t *testing.T) {
	lim := &Limiter{Store: &MemStore{}}
	l := Limit{Pool: "openai", RequestsPerMinute: 40} // 1.5 s apart
	var told []Wait
	ctx := WithWaits(t.Context(), func(w Wait) { told = append(told, w) })
	if _, err := lim.Take(ctx, l, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := lim.Take(ctx, l, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited < 1400*time.Millisecond || len(told) != 1 || told[0].Pool != "openai" || told[0].Paused {
		t.Fatalf("second call waited %v and told %+v; want about 1.5 s and one wait of the openai pool", waited, told)
	}
	if s := told[0].At(told[0].Until.Add(-12 * time.Second)); s != "waiting for the openai rate limit, next slot in 12 s" {
		t.Fatalf("wait text %q", s)
	}
	// A cancelled wait returns the context's error.
	cctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := lim.Take(cctx, l, 1, time.Minute); err != context.DeadlineExceeded {
		t.Fatalf("cancelled wait: %v", err)
	}
}
