package storetest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/ratelimit"
)

// syncBuffer is a bytes.Buffer a logger and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// healWithin bounds a Take on a damaged pool: it starts the pool afresh
// and goes at once.
const healWithin = time.Second

// testFarFuture: a state whose times are in the year 2999 (a host whose
// clock ran ahead, a bad edit) is damage, not a wait: the next Take starts
// the pool afresh and goes at once, with no wait told, one line logged
// names the pool and where the store keeps it, and the pool paces its
// calls again from now on (the next Take logs nothing).
func testFarFuture(t *testing.T, s ratelimit.Store) {
	far := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Update(t.Context(), "openai", func(st *ratelimit.State) error {
		*st = ratelimit.State{Request: far, Token: far, Paused: far, Waiting: map[string]time.Time{"a": far}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	lim := &ratelimit.Limiter{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	l := ratelimit.Limit{Pool: "openai", RequestsPerMinute: 6000, TokensPerMinute: 1_000_000}
	var told []ratelimit.Wait
	ctx := ratelimit.WithWaits(t.Context(), func(w ratelimit.Wait) { told = append(told, w) })
	start := time.Now()
	if _, err := lim.Take(ctx, l, 100, time.Minute); err != nil {
		t.Fatalf("Take on a pool stored in the year 2999: %v; want a slot now (the pool starts afresh)", err)
	}
	if took := time.Since(start); took > healWithin || len(told) != 0 {
		t.Fatalf("Take on a pool stored in the year 2999 took %v and told waits %+v; want under %v and none", took, told, healWithin)
	}
	got := read(t, s, "openai")
	if d := got.Request.Sub(start); d < 0 || d > healWithin || !got.Paused.IsZero() || len(got.Waiting) != 0 {
		t.Fatalf("state after the Take: %+v; want the next request within %v of the Take, no pause, none waiting", got, healWithin)
	}
	where := "memory"
	if loc, ok := s.(ratelimit.Locator); ok {
		where = loc.Locate("openai")
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "rate limit pool damaged") || !strings.Contains(lines[0], "pool=openai") ||
		!strings.Contains(lines[0], where) || !strings.Contains(lines[0], "2999-01-01T00:00:00Z") {
		t.Fatalf("logged %q; want one line naming the damage, pool openai, %s and the time", logs.String(), where)
	}
	if _, err := lim.Take(t.Context(), l, 100, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Fatalf("%d lines logged after a second Take; want still 1:\n%s", n, logs.String())
	}
}
