package providers

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/llm"
)

const modelsFile = `{
  "openai:local": {"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_tokens": 1024, "reasoning_effort": "low",
                   "extra": {"top_k": 40, "repeat_penalty": 1.1, "chat_template_kwargs": {"enable_thinking": false}}},
  "anthropic:claude-sonnet-4-5": {"temperature": 0.3, "top_p": 0.8, "max_tokens": 2048, "reasoning_effort": "medium",
                   "extra": {"top_k": 5, "metadata": {"user_id": "agentrun"}}}
}`

func loadTestModels(t *testing.T) map[string]agent.ModelSettings {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(modelsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := llm.LoadModels(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("models: %d, want 2", len(m))
	}
	return m
}

// TestOpenAISettingsReachTheBody: every setting of the models file is in
// the body the server received, named as Chat Completions names it, extra
// fields at the top level; the reply records the settings.
func TestOpenAISettingsReachTheBody(t *testing.T) {
	t.Parallel()
	settings := loadTestModels(t)["openai:local"]
	f := newFake(t, answer(200, readTestdata(t, "openai_text.json")))
	p, err := New("openai:local", withEnv(map[string]string{"OPENAI_BASE_URL": f.URL + "/v1"}, llm.Options{Settings: settings}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, f.only(t).Body, `{
		"model": "local",
		"messages": [
			{"role": "system", "content": "You file access requests."},
			{"role": "user", "content": "`+hand.Prompt+`"}
		],
		"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_completion_tokens": 1024, "reasoning_effort": "low",
		"top_k": 40, "repeat_penalty": 1.1, "chat_template_kwargs": {"enable_thinking": false}
	}`)
	if got.Settings == nil || got.Settings.String() != settings.String() {
		t.Fatalf("recorded settings %v, want %s", got.Settings, settings)
	}
	if want := `temperature=0.2 top_p=0.9 seed=7 max_tokens=1024 reasoning_effort=low extra={"chat_template_kwargs":{"enable_thinking":false},"repeat_penalty":1.1,"top_k":40}`; got.Settings.String() != want {
		t.Fatalf("recorded settings %s, want %s", got.Settings, want)
	}
}

// TestAnthropicSettingsReachTheBody: the same for the Messages API:
// reasoning_effort goes to output_config.effort.
func TestAnthropicSettingsReachTheBody(t *testing.T) {
	t.Parallel()
	settings := loadTestModels(t)["anthropic:claude-sonnet-4-5"]
	f := newFake(t, answer(200, readTestdata(t, "anthropic_text.json")))
	p, err := New("anthropic:claude-sonnet-4-5", withEnv(map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": f.URL}, llm.Options{Settings: settings}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Complete(t.Context(), userOnly)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, f.only(t).Body, `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 2048,
		"system": [{"type": "text", "text": "You file access requests.", "cache_control": {"type": "ephemeral"}}],
		"messages": [{"role": "user", "content": [{"type": "text", "text": "`+hand.Prompt+`", "cache_control": {"type": "ephemeral"}}]}],
		"temperature": 0.3, "top_p": 0.8, "output_config": {"effort": "medium"},
		"top_k": 5, "metadata": {"user_id": "agentrun"}
	}`)
	if got.Settings == nil || got.Settings.String() != settings.String() {
		t.Fatalf("recorded settings %v, want %s", got.Settings, settings)
	}
}

// TestMaxTokensSetTwice: AGENTRUN_MAX_TOKENS and max_tokens in the models
// file are two ways to set one thing: setting both is refused.
func TestMaxTokensSetTwice(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"openai:x", "anthropic:claude-sonnet-4-5"} {
		_, err := New(spec, withEnv(map[string]string{"OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey, "AGENTRUN_MAX_TOKENS": "512"}, llm.Options{Settings: agent.ModelSettings{MaxTokens: 1024}}))
		if err == nil || !strings.Contains(err.Error(), "max tokens are set twice, 512 by AGENTRUN_MAX_TOKENS and 1024 by max_tokens in the models file") {
			t.Errorf("%s: error %v, want max tokens set twice", spec, err)
		}
	}
}

// TestRequestTimeout: a server that accepts a request and never answers is
// abandoned after the request timeout with a retryable Timeout error (not
// the caller's cancellation), for both providers.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	silent := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	for _, spec := range []string{"openai:x", "anthropic:claude-sonnet-4-5"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, silent)
			env := map[string]string{"OPENAI_BASE_URL": f.URL + "/v1", "ANTHROPIC_BASE_URL": f.URL, "ANTHROPIC_API_KEY": testKey}
			p, err := New(spec, withEnv(env, llm.Options{Timeout: 300 * time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_, err = p.Complete(t.Context(), userOnly)
			took := time.Since(began)
			e := asError(t, err)
			if e.Class != llm.ClassTimeout || !e.Class.Retryable() || !strings.Contains(e.Message, "within the request timeout of 300ms (AGENTRUN_MODEL_TIMEOUT)") {
				t.Fatalf("error %v, want a retryable Timeout naming 300ms", err)
			}
			if took < 300*time.Millisecond || took > 5*time.Second {
				t.Fatalf("gave up after %v, want about 300ms", took)
			}
			if n := len(f.requests()); n != 1 {
				t.Fatalf("server got %d requests, want 1", n)
			}
		})
	}
}

func TestDefaultTimeoutApplies(t *testing.T) {
	t.Parallel()
	p, err := NewOpenAI(OpenAIConfig{Model: "x", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.timeout != 0 {
		t.Fatalf("timeout %v, want 0 (llm.DefaultTimeout at the call)", p.timeout)
	}
	_, cancel, d := withTimeout(t.Context(), p.timeout)
	cancel()
	if d != llm.DefaultTimeout || llm.DefaultTimeout != 2*time.Minute {
		t.Fatalf("request timeout %v, want %v", d, llm.DefaultTimeout)
	}
}
