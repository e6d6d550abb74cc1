package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/llm/providers"
	"github.com/agentrun/agentrun/ratelimit"
)

// limitedPair starts a provider fake answering rpm requests a second and
// returns a limited OpenAI model on it whose limits are declared as
// declared requests per minute.
func limitedPair(t *testing.T, rpm int, declared int64, store ratelimit.Store) (*providerfake.Server, llm.Provider) {
	return limitedPairOf(t, rpm, declared, store, nil)
}

// limitedPairOf is limitedPair, with rewrite (if not nil) changing the
// headers of the fake's answers, each with its index from 0, before they
// are sent.
func limitedPairOf(t *testing.T, rpm int, declared int64, store ratelimit.Store, rewrite func(n int, h http.Header)) (*providerfake.Server, llm.Provider) {
	t.Helper()
	fake, err := providerfake.New(providerfake.Config{RPM: rpm, TPM: 1 << 30, Window: time.Second, Turns: 100})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = fake
	if rewrite != nil {
		var mu sync.Mutex
		answers := 0
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n := answers
			answers++
			mu.Unlock()
			fake.ServeHTTP(headerWriter{w, func(h http.Header) { rewrite(n, h) }}, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	l := &agent.RateLimits{Pool: "openai", RequestsPerMinute: declared}
	p, err := providers.New("openai:gpt-4o-mini", llm.Options{
		Account:  llm.Account{OpenAIAPIKey: "sk-fake", OpenAIBaseURL: srv.URL + "/v1"},
		Settings: agent.ModelSettings{Limits: l},
		Limiter:  &ratelimit.Limiter{Store: store},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p
}

// headerWriter changes an answer's headers (rewrite) before it is sent.
type headerWriter struct {
	http.ResponseWriter
	rewrite func(http.Header)
}

func (w headerWriter) WriteHeader(code int) {
	w.rewrite(w.Header())
	w.ResponseWriter.WriteHeader(code)
}

// bare drops the rate-limit headers of every answer, as many
// OpenAI-compatible servers send none.
func bare(_ int, h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
			h.Del(k)
		}
	}
}

// calls makes n calls of p at once and returns their errors.
func calls(t *testing.T, p llm.Provider, n int) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		})
	}
	wg.Wait()
	return errs
}

// Two "workers" (two models over one store) at the declared limit: the
// provider never refuses, and the calls go at its pace.
func TestLimitedSharesThePool(t *testing.T) {
	t.Parallel()
	store := &ratelimit.MemStore{}
	fake, a := limitedPair(t, 20, 20*60, store)
	_, b := limitedPair(t, 20, 20*60, store) // the same pool: its own fake is unused
	_ = b
	start := time.Now()
	var wg sync.WaitGroup
	var ea, eb []error
	wg.Go(func() { ea = calls(t, a, 30) })
	wg.Go(func() { eb = calls(t, a, 30) })
	wg.Wait()
	took := time.Since(start)
	for _, err := range append(ea, eb...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := fake.Stats().Providers[providerfake.OpenAI]
	if st.Requests != 60 || st.RateLimited != 0 {
		t.Fatalf("fake answered %d and refused %d, want 60 and 0", st.Requests, st.RateLimited)
	}
	// 60 calls at 20 a second: the last goes at 2.95 s.
	if took < 2900*time.Millisecond || took > 6*time.Second {
		t.Fatalf("60 calls took %v, want about 3 s at 20 a second", took)
	}
}

// Declared limits above what the provider allows: its 429s pause the pool
// and every call still succeeds, none failing for the rate limit.
func TestLimited429PausesThePool(t *testing.T) {
	t.Parallel()
	fake, p := limitedPairOf(t, 10, 6000, &ratelimit.MemStore{}, bare) // declared 100 a second, allowed 10; no headers
	for _, err := range calls(t, p, 40) {
		if err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	st := fake.Stats().Providers[providerfake.OpenAI]
	if st.Requests != 40 {
		t.Fatalf("fake answered %d, want 40", st.Requests)
	}
	// Every 429 pauses the whole pool, so they stay few: each pause lets the
	// window drain; without it 40 callers retrying on their own would meet
	// hundreds.
	if st.RateLimited == 0 || st.RateLimited > 40 {
		t.Fatalf("fake refused %d, want some (the declared limit is too high) and at most one per call", st.RateLimited)
	}
}

// A slot past the call's horizon (its deadline less the request's timeout
// and a margin: here 30 s) fails the call as a rate limit, with the wait
// named, and reserves nothing.
func TestLimitedNoSlotBeforeDeadline(t *testing.T) {
	t.Parallel()
	store := &ratelimit.MemStore{}
	lim := &ratelimit.Limiter{Store: store}
	if err := lim.Pause(t.Context(), ratelimit.Limit{Pool: "openai"}, ratelimit.MaxPause); err != nil {
		t.Fatal(err)
	}
	_, p := limitedPair(t, 10, 60, store)
	ctx, cancel := context.WithTimeout(t.Context(), llm.DefaultTimeout+35*time.Second)
	defer cancel()
	_, err := p.Complete(ctx, agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	e, ok := err.(*llm.Error)
	if !ok || e.Class != llm.ClassRateLimit || e.RetryAfter < 4*time.Minute || !strings.Contains(e.Message, "no slot before this attempt's deadline") {
		t.Fatalf("error %v (%T), want a ClassRateLimit error naming the slot", err, err)
	}
}

// A provider that answers every call but says, in its first answer's
// headers, that its one request a window is used and back in 1.5 s (a
// reset is when the whole limit is back): the pool waits that long
// before the next call, with no 429 to tell it. Without the headers the
// next call goes at once. So the headers alone pause the pool.
func TestLimitedHeadersAlonePauseThePool(t *testing.T) {
	t.Parallel()
	const reset = 1500 * time.Millisecond
	for _, tc := range []struct {
		name    string
		rewrite func(int, http.Header)
		paused  bool
	}{
		{"nothing left", func(n int, h http.Header) {
			if n == 0 {
				h.Set("x-ratelimit-limit-requests", "1")
				h.Set("x-ratelimit-remaining-requests", "0")
				h.Set("x-ratelimit-reset-requests", reset.String())
			}
		}, true},
		{"no headers", bare, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, p := limitedPairOf(t, 600, 6000, &ratelimit.MemStore{}, tc.rewrite) // allowed and declared 100 a second
			req := agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}}
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			answered := time.Now()
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			waited := time.Since(answered)
			st := fake.Stats().Providers[providerfake.OpenAI]
			if st.Requests != 2 || st.RateLimited != 0 {
				t.Fatalf("fake answered %d and refused %d, want 2 and 0", st.Requests, st.RateLimited)
			}
			if paused := waited >= reset-200*time.Millisecond; paused != tc.paused || waited > reset+5*time.Second {
				t.Fatalf("the second call took %v after the first answer; want a pause of about %v: %v", waited, reset, tc.paused)
			}
		})
	}
}

// The provider's own headers, at a limit it keeps below the declared one
// (another user of the account): "nothing left" pauses the pool before a
// 429 would, so far fewer calls are refused than without them.
func TestLimitedReadsRateLimitHeaders(t *testing.T) {
	t.Parallel()
	fake, p := limitedPair(t, 10, 6000, &ratelimit.MemStore{}) // declared 100 a second, allowed 10
	for _, err := range calls(t, p, 40) {
		if err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	st := fake.Stats().Providers[providerfake.OpenAI]
	// At most 20 of 40: each header pauses the pool, but the calls
	// already sent when it came back may still be refused; under -race on
	// a loaded machine that window has held up to 17 (CI, 2026-12-07).
	// This bound does not tell the headers from the 429 pause alone
	// (TestLimited429PausesThePool sees 3 or 4 refused here, unloaded);
	// TestLimitedHeadersAlonePauseThePool does.
	if st.Requests != 40 || st.RateLimited > 20 {
		t.Fatalf("fake answered %d and refused %d; want 40, and the headers to keep the refusals down", st.Requests, st.RateLimited)
	}
	t.Logf("40 answered, %d refused", st.RateLimited)
}
