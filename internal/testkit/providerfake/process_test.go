package providerfake_test

import (
	"github.com/agentrun/agentrun/llm/providers"

	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// TestProcess runs cmd/providerfake as a separate process, as the bench
// and the fleet tests do: our providers converse with it streaming, a
// repeated prefix reports cached tokens, and going past -rpm gives a 429
// that the llm package classifies as a rate limit with its Retry-After.
func TestProcess(t *testing.T) {
	t.Parallel()
	proc, root := testenv.ProviderFake(t, "-rpm", "12", "-turns", "2", "-log")
	ps := ours(t, root)
	for _, name := range []string{providerfake.OpenAI, providerfake.Anthropic} { // 3 requests each
		calls, final := converse(t, ps[name], true)
		checkConversation(t, calls, final, 2)
	}

	// Cached tokens, in the raw JSON: 2 requests each.
	system := strings.Repeat("You file access requests carefully. ", 200)
	oa := func(user string) string {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": []any{
			map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": user}}})
		return string(b)
	}
	post(t, root+"/v1/chat/completions", oa("first"))
	_, b := post(t, root+"/v1/chat/completions", oa("second"))
	openaiCached := num(t, b, "usage", "prompt_tokens_details", "cached_tokens")
	if openaiCached < 1024 || openaiCached%128 != 0 {
		t.Errorf("OpenAI: %d cached tokens on a repeated ~1800-token prefix, want 1024 or more in 128-token steps", openaiCached)
	}
	an := func(user string) string {
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100,
			"system":   []any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
			"messages": []any{map[string]any{"role": "user", "content": user}}})
		return string(b)
	}
	_, b1 := post(t, root+"/v1/messages", an("first"))
	_, b2 := post(t, root+"/v1/messages", an("second"))
	written, read := num(t, b1, "usage", "cache_creation_input_tokens"), num(t, b2, "usage", "cache_read_input_tokens")
	if written < 1024 || read != written || num(t, b2, "usage", "cache_creation_input_tokens") != 0 {
		t.Errorf("Anthropic: wrote %d, then read %d (%v), want the same breakpoint prefix read back", written, read, b2["usage"])
	}

	// 10 requests so far: 2 more are answered, the 13th is refused.
	var rl *llm.Error
	answered := 0
	for range 5 {
		_, err := ps[providerfake.OpenAI].Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil {
			if !errors.As(err, &rl) {
				t.Fatalf("after %d: %v, want an *llm.Error", answered, err)
			}
			break
		}
		answered++
	}
	if answered != 2 || rl == nil {
		t.Fatalf("%d answered before a refusal (%v), want 2 then a 429", answered, rl)
	}
	if rl.Class != llm.ClassRateLimit || rl.StatusCode != http.StatusTooManyRequests || rl.RetryAfter < 30*time.Second || rl.RetryAfter > time.Minute {
		t.Errorf("refusal %+v: want ClassRateLimit, HTTP 429, a Retry-After of under a minute (the first request leaves the window then)", rl)
	}

	res, err := http.Get(root + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st providerfake.Stats
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	o, a := st.Providers[providerfake.OpenAI], st.Providers[providerfake.Anthropic]
	if o.Requests != 7 || a.Requests != 5 || o.RateLimited != 1 || a.RateLimited != 0 || st.PeakWindowRequests != 12 || st.RPM != 12 {
		t.Errorf("stats: openai %+v, anthropic %+v, peak %d: want 7 and 5 answered, 1 refused, peak 12", o, a, st.PeakWindowRequests)
	}
	if o.CachedTokens != openaiCached || a.CachedTokens != read || a.CacheWritten != written {
		t.Errorf("stats: cached %d/%d written %d, want %d/%d and %d", o.CachedTokens, a.CachedTokens, a.CacheWritten, openaiCached, read, written)
	}
	if len(o.PerMinute) == 0 || o.PerMinute[0].Requests+a.PerMinute[0].Requests > 12 {
		t.Errorf("per minute: %+v %+v", o.PerMinute, a.PerMinute)
	}
	if !proc.Logged("providerfake: openai 429 requests") {
		t.Errorf("no 429 in the -log lines: %s", proc.Tail())
	}
}

func TestProcessBadFlags(t *testing.T) {
	t.Parallel()
	path := testenv.Program(t, testenv.ProviderFakePkg)
	for _, args := range [][]string{{"-rpm", "0"}, {"-tpm", "many"}, {"-nope"}, {"extra"}} {
		code, out := testenv.Run(t, nil, 10*time.Second, path, args...)
		if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.HasPrefix(out, "providerfake: ") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line", args, code, out)
		}
	}
}

// TestProviderFakeEnv: the settings testenv.ProviderFakeEnv gives a worker
// load (internal/config) into a provider that answers from the fake.
func TestProviderFakeEnv(t *testing.T) {
	t.Parallel()
	s, root := newFake(t, providerfake.Config{})
	for _, c := range []struct{ provider, model string }{{providerfake.OpenAI, "gpt-4o-mini"}, {providerfake.Anthropic, "claude-sonnet-4-5"}} {
		env := map[string]string{}
		for _, kv := range testenv.ProviderFakeEnv(root, c.provider, c.model) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		cfg, err := config.Load(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", c.provider, err)
		}
		p, err := providers.New(cfg.Model, cfg.ModelOptions())
		if err != nil {
			t.Fatalf("%s: %v", c.provider, err)
		}
		r, err := p.Complete(t.Context(), agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
		if err != nil || r.Message.Content != "I read 0 tool results." {
			t.Errorf("%s: %+v %v", c.provider, r.Message, err)
		}
	}
	if st := s.Stats(); st.Providers[providerfake.OpenAI].Requests != 1 || st.Providers[providerfake.Anthropic].Requests != 1 {
		t.Errorf("stats %+v %+v, want one request each", st.Providers[providerfake.OpenAI], st.Providers[providerfake.Anthropic])
	}
}
