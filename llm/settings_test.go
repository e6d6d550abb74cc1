package llm

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
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
	m, err := LoadModels(path)
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
	p, err := New("openai:local", withEnv(map[string]string{"OPENAI_BASE_URL": f.URL + "/v1"}, Options{Settings: settings}))
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
	p, err := New("anthropic:claude-sonnet-4-5", withEnv(map[string]string{"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": f.URL}, Options{Settings: settings}))
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

// TestScriptedRecordsSettings: the scripted model sends nothing and records
// the settings it was given; without settings its replies record none, as
// before.
func TestScriptedRecordsSettings(t *testing.T) {
	t.Parallel()
	temp := 0.5
	p, err := New("scripted", withEnv(nil, Options{Settings: agent.ModelSettings{Temperature: &temp}}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Complete(t.Context(), userOnly)
	if err != nil || r.Settings == nil || r.Settings.String() != "temperature=0.5" {
		t.Fatalf("reply settings %v (%v), want temperature=0.5", r.Settings, err)
	}
	p, _ = New("scripted", withEnv(nil, Options{}))
	if r, _ := p.Complete(t.Context(), userOnly); r.Settings != nil {
		t.Fatalf("reply settings %v, want none", r.Settings)
	}
}

// TestModelsFileErrors: each bad models file is refused with one line
// naming the file, the model, the key and what is valid.
func TestModelsFileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{`[1]`, []string{"m.json", "not a JSON object of models"}},
		{`{"gemini:pro": {}}`, []string{`"gemini:pro" is not a model`, `"openai:MODEL"`}},
		{`{"openai:": {}}`, []string{`"openai:" is not a model`}},
		{`{"openai:x": 3}`, []string{`"openai:x"`, "is not an object", "temperature, top_p, seed, max_tokens, reasoning_effort, extra"}},
		{`{"openai:x": {"temprature": 0.2}}`, []string{`m.json: "openai:x": temprature: unknown setting; valid: temperature, top_p, seed, max_tokens, reasoning_effort, extra`}},
		{`{"openai:x": {"temperature": "hot"}}`, []string{`"openai:x": temperature: "hot" is not valid here; want a number`}},
		{`{"openai:x": {"temperature": null}}`, []string{`temperature: null is not valid here`}},
		{`{"openai:x": {"temperature": 3}}`, []string{"temperature: 3 is out of range; want a number from 0 to 2 for openai"}},
		{`{"anthropic:x": {"temperature": 1.5}}`, []string{"temperature: 1.5 is out of range; want a number from 0 to 1 for anthropic"}},
		{`{"openai:x": {"top_p": 1.2}}`, []string{"top_p: 1.2 is out of range"}},
		{`{"openai:x": {"seed": 7.5}}`, []string{"seed: 7.5 is not valid here; want a whole number"}},
		{`{"anthropic:x": {"seed": 7}}`, []string{"seed: anthropic takes no seed; valid for anthropic: temperature, top_p, max_tokens, reasoning_effort, extra"}},
		{`{"openai:x": {"max_tokens": -5}}`, []string{"max_tokens: -5 is not positive"}},
		{`{"openai:x": {"max_tokens": "lots"}}`, []string{`max_tokens: "lots" is not valid here; want a positive whole number`}},
		{`{"openai:x": {"reasoning_effort": "extreme"}}`, []string{`reasoning_effort: "extreme" is not an effort openai takes; want one of none, minimal, low, medium, high, xhigh, max`}},
		{`{"anthropic:x": {"reasoning_effort": "minimal"}}`, []string{`want one of low, medium, high, xhigh, max`}},
		{`{"openai:x": {"extra": [1]}}`, []string{"extra: [1] is not an object"}},
		{`{"openai:x": {"extra": {"temperature": 1}}}`, []string{"extra.temperature: agentrun or a named setting sets it"}},
		{`{"anthropic:x": {"extra": {"system": "hi"}}}`, []string{"extra.system: agentrun or a named setting sets it"}},
	} {
		_, err := ParseModels("m.json", []byte(tc.file))
		if err == nil {
			t.Errorf("%s: no error", tc.file)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error on more than one line: %q", tc.file, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.file, err, w)
			}
		}
	}
}

// TestMaxTokensSetTwice: AGENTRUN_MAX_TOKENS and max_tokens in the models
// file are two ways to set one thing: setting both is refused.
func TestMaxTokensSetTwice(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"openai:x", "anthropic:claude-sonnet-4-5"} {
		_, err := New(spec, withEnv(map[string]string{"OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey, "AGENTRUN_MAX_TOKENS": "512"}, Options{Settings: agent.ModelSettings{MaxTokens: 1024}}))
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
			p, err := New(spec, withEnv(env, Options{Timeout: 300 * time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_, err = p.Complete(t.Context(), userOnly)
			took := time.Since(began)
			e := asError(t, err)
			if e.Class != ClassTimeout || !e.Class.Retryable() || !strings.Contains(e.Message, "within the request timeout of 300ms (AGENTRUN_MODEL_TIMEOUT)") {
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
		t.Fatalf("timeout %v, want 0 (DefaultTimeout at the call)", p.timeout)
	}
	_, cancel, d := withTimeout(t.Context(), p.timeout)
	cancel()
	if d != DefaultTimeout || DefaultTimeout != 2*time.Minute {
		t.Fatalf("request timeout %v, want %v", d, DefaultTimeout)
	}
}

// TestExampleModelsFile: the example docs/configuration.md points to parses.
func TestExampleModelsFile(t *testing.T) {
	t.Parallel()
	m, err := LoadModels("example-models.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 || m["openai:o4-mini"].ReasoningEffort != "low" || m["anthropic:claude-sonnet-4-5"].MaxTokens != 8192 {
		t.Fatalf("example models: %v", m)
	}
}
