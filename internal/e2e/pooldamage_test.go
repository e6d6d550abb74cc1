package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/ratelimit"
)

// TestRateLimitPoolFrom2999OnDevServer: the pool file of the fleet's
// openai limit holds times in the year 2999 (a host whose clock ran ahead,
// a bad edit). The worker starts the pool afresh at the run's first model
// call and says so once, naming the file: the run completes within a
// minute, its 4 model calls each in their first attempt (a damaged pool
// is no wait and no failed attempt), and the pool paces calls from now on.
func TestRateLimitPoolFrom2999OnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	_, root := testenv.ProviderFake(t, "-rpm", "600", "-window", "1s", "-tpm", "100000000", "-turns", "3")
	f := newFleet(t, srv)
	pool := filepath.Join(f.dir, "journal", "limits", "openai.json")
	far := "2999-01-01T00:00:00Z"
	if err := os.MkdirAll(filepath.Dir(pool), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pool, []byte(`{"request":"`+far+`","token":"`+far+`","paused":"`+far+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := f.env(append(testenv.ProviderFakeEnv(root, "openai", "fake-model"), "AGENTRUN_MODELS="+limitedModels(t, "openai:fake-model", 600))...)
	w := testenv.Start(t, env, testenv.Program(t, "worker"))
	if err := w.WaitLogged(t.Context(), "worker started", time.Minute); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	id := startRuns(t, f, "e2e-2999", 1)[0]
	waitStatus(t, srv, id, "Completed", time.Minute)
	took := time.Since(began)
	if n := laterModelAttempts(t, srv, id); n != 0 {
		t.Errorf("%d model steps started a second attempt; want 0: a damaged pool is no failed attempt", n)
	}
	if st := fakeStats(t, root).Providers[providerfake.OpenAI]; st.Requests != 4 || st.RateLimited != 0 {
		t.Errorf("the fake answered %d and refused %d; want 4 and 0", st.Requests, st.RateLimited)
	}
	if n := strings.Count(w.Output(), "rate limit pool damaged"); n != 1 || !strings.Contains(w.Output(), pool) || !strings.Contains(w.Output(), far) {
		t.Errorf("the worker logged the damage %d times; want once, naming %s and %s:\n%s", n, pool, far, w.Tail())
	}
	b, err := os.ReadFile(pool)
	if err != nil {
		t.Fatal(err)
	}
	var s ratelimit.State
	if err := json.Unmarshal(b, &s); err != nil || s.Request.Before(began) || s.Request.After(time.Now().Add(time.Minute)) || !s.Paused.IsZero() {
		t.Errorf("the pool file after the run: %s (%v); want the next request within a minute of now, no pause", b, err)
	}
	t.Logf("completed in %v", took.Round(time.Millisecond))
}
