package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// fakeStats reads the provider fake's /stats.
func fakeStats(t *testing.T, root string) providerfake.Stats {
	t.Helper()
	s, err := fakeStatsErr(root)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fakeStatsErr(root string) (providerfake.Stats, error) {
	var s providerfake.Stats
	res, err := http.Get(root + "/stats")
	if err != nil {
		return s, err
	}
	defer res.Body.Close()
	return s, json.NewDecoder(res.Body).Decode(&s)
}

// TestProviderCachingOnDevServer: a worker whose model is the provider
// fake, through the real Anthropic and OpenAI clients, runs 6 turns (5
// lookups, then the answer). The Anthropic requests carry cache
// breakpoints, so the fake reads the earlier turns' prefix from its
// cache; the OpenAI fake caches long prefixes by itself. Each run's usage
// in state equals the fake's own count of tokens, cached tokens included,
// and its cost is the invoice of those counts at the models file's price.
func TestProviderCachingOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			_, root := testenv.ProviderFake(t, "-turns", "5", "-min-cache", "32", "-rpm", "10000", "-tpm", "10000000")
			f := newFleet(t, srv)
			model := provider + ":fake-model"
			price := agent.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
			models := filepath.Join(t.TempDir(), "models.json")
			if err := os.WriteFile(models, []byte(testenv.MustJSON(map[string]any{model: map[string]any{"price": price}})), 0o600); err != nil {
				t.Fatal(err)
			}
			env := f.env(append(testenv.ProviderFakeEnv(root, provider, "fake-model"), "AGENTRUN_MODELS="+models)...)
			testenv.Start(t, env, testenv.Program(t, "worker"))
			run := "e2e-cache-" + provider
			code, out := testenv.Run(t, env, 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", "look it up five times")
			if code != 0 || !strings.Contains(out, "I read 5 tool results") {
				t.Fatalf("starter --wait: exit %d\n%s", code, out)
			}
			st, err := state(t, srv, run)
			if err != nil {
				t.Fatal(err)
			}
			fs := fakeStats(t, root).Providers[provider]
			if fs == nil || fs.Requests != 6 {
				t.Fatalf("fake stats %+v: want 6 requests", fs)
			}
			u := st.Usage
			if u.InputTokens != fs.InputTokens || u.OutputTokens != fs.OutputTokens || u.CacheReadTokens != fs.CachedTokens || u.CacheWriteTokens != fs.CacheWritten {
				t.Fatalf("state usage %+v; the fake counted %+v", u, fs)
			}
			if u.CacheReadTokens == 0 || (provider == "anthropic" && u.CacheWriteTokens == 0) {
				t.Fatalf("no cached tokens: %+v", u)
			}
			bill := price.Cost(agent.Usage{InputTokens: fs.InputTokens, OutputTokens: fs.OutputTokens, CacheReadTokens: fs.CachedTokens, CacheWriteTokens: fs.CacheWritten})
			if math.Abs(u.Cost-bill) > 1e-9 || u.Cost == 0 {
				t.Fatalf("cost %v, the invoice of the fake's counts %v", u.Cost, bill)
			}
			t.Logf("%s: %d input tokens, %d read from the cache (%.0f%%), %d written; cost %s", provider, u.InputTokens, u.CacheReadTokens, 100*float64(u.CacheReadTokens)/float64(u.InputTokens), u.CacheWriteTokens, agent.FormatCost(u.Cost))
		})
	}
}
