package ratelimit

import (
	"context"
	"fmt"
	"reflect"
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
	s.settle(l, 1000, 500, t0)
	if at, _ := s.reserve(l, t0, 1000, t0.Add(time.Hour)); !near(at, t0.Add(15*sec)) {
		t.Fatalf("third call at %v, want 15s", at.Sub(t0))
	}
	// One that used more holds the pool longer.
	s.settle(l, 1000, 3000, t0)
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
	changed := !reflect.DeepEqual(s, before)
	if ok || !near(at, t0.Add(60*sec)) || changed {
		t.Fatalf("past the horizon: slot %v ok %t, state changed %t", at.Sub(t0), ok, changed)
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

// A caller that wakes long after its slot (frozen, e.g. SIGSTOP) takes a
// new one instead of going among the calls reserved since.
func TestTakeLateTakesANewSlot(t *testing.T) {
	m := &MemStore{}
	calls, lateAt := 0, -1
	lim := &Limiter{Store: m, Now: func() time.Time {
		calls++
		if calls == lateAt {
			return time.Now().Add(time.Second) // woke a second late
		}
		return time.Now()
	}}
	l := Limit{Pool: "p", RequestsPerMinute: 3000} // 20.5 ms apart
	if _, err := lim.Take(t.Context(), l, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	var s State
	_ = m.Update(t.Context(), "p", func(st *State) error { s = *st; return nil })
	// The second call: its horizon (1), now (2), the sleep (3), the look
	// after it (4): late.
	calls, lateAt = 0, 4
	if _, err := lim.Take(t.Context(), l, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	var after State
	_ = m.Update(t.Context(), "p", func(st *State) error { after = *st; return nil })
	if gaps := after.Request.Sub(s.Request) / l.requestGap(); gaps != 2 || calls < 6 {
		t.Fatalf("the pace moved %d gaps in %d looks at the clock; want 2: the late slot, then a new one", gaps, calls)
	}
}

// Callers that cannot reserve yet keep one horizon, fixed when they began:
// under contention each either gets a slot before it or a NoSlotError by
// it, never a wait that slides on with every look.
func TestTakeHorizonHoldsUnderContention(t *testing.T) {
	lim := &Limiter{Store: &MemStore{}}
	l := Limit{Pool: "p", RequestsPerMinute: 600} // 102.6 ms apart
	const callers, horizon = 20, 500 * time.Millisecond
	start := time.Now()
	type result struct {
		err  error
		took time.Duration
	}
	results := make(chan result, callers)
	for range callers {
		go func() {
			_, err := lim.Take(t.Context(), l, 1, horizon)
			results <- result{err, time.Since(start)}
		}()
	}
	got, refused := 0, 0
	for range callers {
		r := <-results
		switch {
		case r.err == nil:
			got++
		case IsNoSlot(r.err):
			refused++
		default:
			t.Fatalf("take: %v", r.err)
		}
		if r.took > horizon+200*time.Millisecond {
			t.Fatalf("a take returned after %v, past its horizon of %v", r.took, horizon)
		}
	}
	// Slots at 0, 103, 205, 308, 410 ms, perhaps 513 ms for one that began
	// a little late.
	if got < 5 || got > 6 || refused != callers-got {
		t.Fatalf("%d slots and %d refused of %d callers; want 5 or 6 slots, the rest refused", got, refused, callers)
	}
}

// A caller's notice counts the callers already waiting: half of them go
// before it; an ended wait leaves the pool's list.
func TestTakeNoticeCountsWaiters(t *testing.T) {
	m := &MemStore{}
	now := time.Now()
	told := takeTold(t, m, now, map[string]time.Time{"a": now.Add(time.Minute), "b": now.Add(time.Minute), "c": now.Add(time.Minute),
		"dead": now.Add(-time.Second)})
	if len(told) != 1 {
		t.Fatalf("told %d times, want once", len(told))
	}
	want := now.Add(3*time.Second + 3*sec/2) // the pool's slot and half the three live waiters
	if d := told[0].Until.Sub(want); d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Fatalf("notice's slot %v from now, want %v", told[0].Until.Sub(now), want.Sub(now))
	}
	var s State
	_ = m.Update(t.Context(), "openai", func(st *State) error { s = *st; return nil })
	if len(s.Waiting) != 3 {
		t.Fatalf("waiting after the wait ended: %v, want a, b and c (the dead entry pruned, its own left)", s.Waiting)
	}
}

// peakStore is a MemStore that records the most callers its pools' states
// held waiting after an Update.
type peakStore struct {
	MemStore
	peak int
}

func (p *peakStore) Update(ctx context.Context, pool string, fn func(*State) error) error {
	return p.MemStore.Update(ctx, pool, func(s *State) error {
		err := fn(s)
		p.peak = max(p.peak, len(s.Waiting))
		return err
	})
}

// TestTakeWaitingBounded: a pool with MaxWaiting callers waiting counts no
// more; the caller still waits and is told of the wait.
func TestTakeWaitingBounded(t *testing.T) {
	m := &peakStore{}
	now := time.Now()
	waiting := map[string]time.Time{}
	for i := range MaxWaiting {
		waiting[fmt.Sprintf("w%d", i)] = now.Add(time.Minute)
	}
	told := takeTold(t, m, now, waiting) // the seeding itself holds MaxWaiting
	if m.peak != MaxWaiting {
		t.Fatalf("the pool held %d callers waiting; want at most MaxWaiting, %d", m.peak, MaxWaiting)
	}
	if len(told) != 1 || told[0].Until.Sub(now) < 3*time.Second {
		t.Fatalf("told %+v; want one notice of a slot 3 s off or more", told)
	}
}

// takeTold sets the openai pool of s to its next request 3 s after now and
// waiting as its callers waiting, has one caller Take a slot for 100 ms
// (it ends by its context, the slot being further off), and returns the
// waits it was told of.
func takeTold(t *testing.T, s Store, now time.Time, waiting map[string]time.Time) []Wait {
	t.Helper()
	if err := s.Update(t.Context(), "openai", func(st *State) error {
		st.Request = now.Add(3 * time.Second)
		st.Waiting = waiting
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var told []Wait
	ctx, cancel := context.WithTimeout(WithWaits(t.Context(), func(w Wait) { told = append(told, w) }), 100*time.Millisecond)
	defer cancel()
	lim := &Limiter{Store: s}
	if _, err := lim.Take(ctx, Limit{Pool: "openai", RequestsPerMinute: 60}, 1, time.Hour); err != context.DeadlineExceeded {
		t.Fatalf("take: %v, want the context's end", err)
	}
	return told
}
