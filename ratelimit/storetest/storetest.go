package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/ratelimit"
)

// Run runs the suite on the stores open returns, each over a fresh, empty
// backing.
func Run(t *testing.T, open func(t *testing.T) ratelimit.Store) {
	RunShared(t, func(t *testing.T) func() ratelimit.Store {
		s := open(t)
		return func() ratelimit.Store { return s }
	})
}

// RunShared runs the suite on the backings open returns: open makes a
// fresh, empty backing and returns the function that gives another Store
// value over it at each call.
func RunShared(t *testing.T, open func(t *testing.T) func() ratelimit.Store) {
	t.Run("FreshPoolIsZero", func(t *testing.T) { t.Parallel(); testFresh(t, open(t)()) })
	t.Run("UpdateKeepsWhatFnSet", func(t *testing.T) { t.Parallel(); testKeeps(t, open(t)) })
	t.Run("FnErrorKeepsState", func(t *testing.T) { t.Parallel(); testFnError(t, open(t)()) })
	t.Run("ConcurrentUpdatesLoseNone", func(t *testing.T) { t.Parallel(); testConcurrent(t, open(t)) })
	t.Run("DoneContext", func(t *testing.T) { t.Parallel(); testDone(t, open(t)()) })
	t.Run("KeepsMaxWaiting", func(t *testing.T) { t.Parallel(); testMaxWaiting(t, open(t)()) })
	t.Run("FarFutureHeals", func(t *testing.T) { t.Parallel(); testFarFuture(t, open(t)()) })
}

// epoch is the suite's clock origin: the states it writes are in the
// future of no real caller.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)

// read returns the pool's state through s, by an Update that changes
// nothing.
func read(t *testing.T, s ratelimit.Store, pool string) ratelimit.State {
	t.Helper()
	var got ratelimit.State
	if err := s.Update(t.Context(), pool, func(st *ratelimit.State) error {
		got = *st
		return nil
	}); err != nil {
		t.Fatalf("Update %s (read): %v", pool, err)
	}
	return got
}

// sameState reports whether a and b are the same instants and the same
// waiting callers (a store may keep times in another location).
func sameState(a, b ratelimit.State) bool {
	if !a.Request.Equal(b.Request) || !a.Token.Equal(b.Token) || !a.Paused.Equal(b.Paused) || len(a.Waiting) != len(b.Waiting) {
		return false
	}
	for id, until := range a.Waiting {
		if u, ok := b.Waiting[id]; !ok || !u.Equal(until) {
			return false
		}
	}
	return true
}

func testFresh(t *testing.T, s ratelimit.Store) {
	calls := 0
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		calls++
		if !sameState(*st, ratelimit.State{}) {
			t.Errorf("a fresh pool's state is %+v; want the zero State", *st)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("Update called fn %d times; want 1", calls)
	}
}

func testKeeps(t *testing.T, stores func() ratelimit.Store) {
	s := stores()
	want := ratelimit.State{
		Request: epoch.Add(time.Second),
		Token:   epoch.Add(2500 * time.Millisecond),
		Paused:  epoch.Add(time.Minute),
		Waiting: map[string]time.Time{"worker-1/a": epoch.Add(3 * time.Second), "worker-2/b": epoch.Add(4 * time.Second)},
	}
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		*st = want
		st.Waiting = maps.Clone(want.Waiting) // the store's map, not want's
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, "openai"); !sameState(got, want) {
		t.Fatalf("state after Update: %+v; want %+v", got, want)
	}
	if other := stores(); other != s {
		if got := read(t, other, "openai"); !sameState(got, want) {
			t.Fatalf("state through a second store: %+v; want %+v", got, want)
		}
	}
	if got := read(t, s, "anthropic"); !sameState(got, ratelimit.State{}) {
		t.Fatalf("another pool's state: %+v; want the zero State", got)
	}
	// A change of one entry keeps the others; removing all empties Waiting.
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		delete(st.Waiting, "worker-1/a")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, "openai"); len(got.Waiting) != 1 || !got.Waiting["worker-2/b"].Equal(epoch.Add(4*time.Second)) {
		t.Fatalf("Waiting after deleting worker-1/a: %v; want only worker-2/b", got.Waiting)
	}
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		st.Waiting = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, "openai"); len(got.Waiting) != 0 || !got.Request.Equal(want.Request) {
		t.Fatalf("state after emptying Waiting: %+v; want no waiting and Request %v", got, want.Request)
	}
}

func testFnError(t *testing.T, s ratelimit.Store) {
	want := ratelimit.State{Request: epoch, Waiting: map[string]time.Time{"a": epoch}}
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		*st = want
		st.Waiting = maps.Clone(want.Waiting) // the store's map, not want's
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	errFn := errors.New("fn refused")
	err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		st.Request = epoch.Add(time.Hour)
		st.Paused = epoch.Add(time.Hour)
		st.Waiting["a"] = epoch.Add(time.Hour)
		st.Waiting["b"] = epoch.Add(time.Hour)
		return errFn
	})
	if !errors.Is(err, errFn) {
		t.Fatalf("Update whose fn failed returned %v; want fn's error", err)
	}
	if got := read(t, s, "openai"); !sameState(got, want) {
		t.Fatalf("state after fn's error: %+v; want it unchanged, %+v", got, want)
	}
}

// The concurrent updaters: goroutines, each through a store of its own
// where the backend has separate ones, each adding step to Request
// increments times.
const (
	updaters   = 4
	increments = 200
	step       = time.Millisecond
)

func testConcurrent(t *testing.T, stores func() ratelimit.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, updaters)
	for i := range updaters {
		s := stores()
		wg.Go(func() {
			for n := range increments {
				if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
					if st.Request.IsZero() {
						st.Request = epoch
					}
					st.Request = st.Request.Add(step)
					if st.Waiting == nil {
						st.Waiting = map[string]time.Time{}
					}
					st.Waiting[fmt.Sprint(i)] = epoch.Add(time.Duration(n))
					return nil
				}); err != nil {
					errs <- fmt.Errorf("updater %d, increment %d: %w", i, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := read(t, stores(), "openai")
	if n := got.Request.Sub(epoch) / step; n != updaters*increments {
		t.Fatalf("Request moved on by %d increments; want %d (%d updaters of %d): updates were lost", n, updaters*increments, updaters, increments)
	}
	if len(got.Waiting) != updaters {
		t.Fatalf("Waiting holds %d entries; want %d, one per updater", len(got.Waiting), updaters)
	}
	for id, until := range got.Waiting {
		if !until.Equal(epoch.Add(increments - 1)) {
			t.Fatalf("Waiting[%s] = %v; want its updater's last, %v", id, until, epoch.Add(increments-1))
		}
	}
}

// doneWithin bounds how long an Update with a done context may take.
const doneWithin = time.Second

func testDone(t *testing.T, s ratelimit.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	start := time.Now()
	err := s.Update(ctx, "openai", func(st *ratelimit.State) error {
		called = true
		st.Request = epoch
		return nil
	})
	if took := time.Since(start); took > doneWithin {
		t.Errorf("Update with a cancelled context took %v; want under %v", took, doneWithin)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with a cancelled context returned %v; want context.Canceled", err)
	}
	if called {
		t.Fatal("Update with a cancelled context called fn")
	}
	if got := read(t, s, "openai"); !sameState(got, ratelimit.State{}) {
		t.Fatalf("state after a cancelled Update: %+v; want the zero State", got)
	}
}

// testMaxWaiting: a state with ratelimit.MaxWaiting callers waiting is kept
// whole; a store that dropped it would let the pool's next calls go at
// once, over the limit.
func testMaxWaiting(t *testing.T, s ratelimit.Store) {
	want := ratelimit.State{Request: epoch.Add(time.Second), Token: epoch.Add(2 * time.Second), Paused: epoch.Add(3 * time.Second),
		Waiting: map[string]time.Time{}}
	for i := range ratelimit.MaxWaiting {
		want.Waiting[fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)] = epoch.Add(time.Duration(i) * time.Millisecond)
	}
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		*st = want
		st.Waiting = maps.Clone(want.Waiting)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, "openai"); !sameState(got, want) {
		t.Fatalf("a state of %d waiting callers came back as %d waiting, Request %v (want %v): the store does not keep it whole",
			ratelimit.MaxWaiting, len(got.Waiting), got.Request, want.Request)
	}
}
