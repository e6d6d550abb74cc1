package providerfake

import (
	"testing"
	"time"
)

func TestLimiterRequests(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	l := limiter{rpm: 3, tpm: 1000, window: time.Minute}
	for i := range 3 {
		if r, _ := l.admit(t0.Add(time.Duration(i)*10*time.Second), 1, 1); r != nil {
			t.Fatalf("request %d refused: %+v", i, r)
		}
	}
	r, u := l.admit(t0.Add(30*time.Second), 1, 1)
	if r == nil || r.kind != "requests" || r.wait != 30*time.Second {
		t.Fatalf("4th request: %+v, want refused on requests, wait 30s", r)
	}
	if u.requests != 3 || u.resetRequests != 50*time.Second {
		t.Errorf("usage %+v, want 3 requests, whole again in 50s", u)
	}
	// The first request leaves the window at t0+60s.
	if r, u := l.admit(t0.Add(60*time.Second), 1, 1); r != nil || u.requests != 3 {
		t.Errorf("at t0+60s: %+v %+v, want admitted with 3 in the window", r, u)
	}
}

func TestLimiterTokens(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	l := limiter{rpm: 100, tpm: 100, window: time.Minute}
	if r, _ := l.admit(t0, 30, 10); r != nil {
		t.Fatal(r)
	}
	if r, _ := l.admit(t0.Add(5*time.Second), 30, 10); r != nil {
		t.Fatal(r)
	}
	// 80 used: 30 more fit only once the first 40 leave, at t0+60s.
	r, u := l.admit(t0.Add(10*time.Second), 25, 5)
	if r == nil || r.kind != "tokens" || r.wait != 50*time.Second {
		t.Fatalf("refusal %+v, want tokens, wait 50s", r)
	}
	if u.tokens != 80 || u.inTokens != 60 || u.outTokens != 20 {
		t.Errorf("usage %+v, want 80 tokens (60 in, 20 out)", u)
	}
	if r, _ := l.admit(t0.Add(11*time.Second), 101, 0); r == nil || r.wait != 0 {
		t.Errorf("a request larger than the limit: %+v, want refused with no wait", r)
	}
}

func TestOpenAICacheSteps(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := prefixCache{ttl: time.Minute}
	h := func(n byte) [32]byte { return [32]byte{n} }
	// A prompt of prefixes 600, 1300 and 1400 tokens.
	if got := c.openAICached([][32]byte{h(1), h(2), h(3)}, []int64{600, 1300, 1400}, 1024, now); got != 0 {
		t.Errorf("first sight: %d cached, want 0", got)
	}
	if got := c.openAICached([][32]byte{h(1), h(2), h(4)}, []int64{600, 1300, 1500}, 1024, now); got != 1280 {
		t.Errorf("1300 tokens seen before: %d cached, want 1280 (128-token steps)", got)
	}
	if got := c.openAICached([][32]byte{h(1), h(5)}, []int64{600, 900}, 1024, now); got != 0 {
		t.Errorf("600 tokens seen before: %d cached, want 0 (under 1024)", got)
	}
	if got := c.openAICached([][32]byte{h(1), h(2)}, []int64{600, 1300}, 1024, now.Add(2*time.Minute)); got != 0 {
		t.Errorf("after the TTL: %d cached, want 0", got)
	}
}

func TestAnthropicRollingBreakpoint(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	c := prefixCache{ttl: time.Minute}
	seg := func(mark bool) segment { return segment{json: []byte("x"), breakpoint: mark} }
	h := func(n byte) [32]byte { return [32]byte{n} }
	// Turn 1: system (1200 tokens), user (1300), the breakpoint on the user's block.
	r, w := c.anthropicCached([]segment{seg(false), seg(true)}, [][32]byte{h(1), h(2)}, []int64{1200, 1300}, 1024, now)
	if r != 0 || w != 1300 {
		t.Errorf("turn 1: read %d written %d, want 0 and 1300", r, w)
	}
	// Turn 2: the same, then assistant and user blocks; the breakpoint moved to the end.
	r, w = c.anthropicCached([]segment{seg(false), seg(false), seg(false), seg(true)}, [][32]byte{h(1), h(2), h(3), h(4)}, []int64{1200, 1300, 1350, 1400}, 1024, now)
	if r != 1300 || w != 100 {
		t.Errorf("turn 2: read %d written %d, want 1300 (found looking back) and 100", r, w)
	}
	// Turn 3 with no breakpoint reads nothing, though its prefix was written.
	r, w = c.anthropicCached([]segment{seg(false), seg(false), seg(false), seg(false)}, [][32]byte{h(1), h(2), h(3), h(4)}, []int64{1200, 1300, 1350, 1400}, 1024, now)
	if r != 0 || w != 0 {
		t.Errorf("turn 3, unmarked: read %d written %d, want 0 and 0", r, w)
	}
}
