package llm

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestScriptedRecordsSettings: the scripted model sends nothing and records
// the settings it was given; without settings its replies record none, as
// before.
func TestScriptedRecordsSettings(t *testing.T) {
	t.Parallel()
	temp := 0.5
	p, err := NewScriptedSpec("scripted", agent.ModelSettings{Temperature: &temp})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Complete(t.Context(), agent.ModelRequest{Messages: agent.UserMessages("hi")})
	if err != nil || r.Settings == nil || r.Settings.String() != "temperature=0.5" {
		t.Fatalf("reply settings %v (%v), want temperature=0.5", r.Settings, err)
	}
	p, _ = NewScriptedSpec("scripted", agent.ModelSettings{})
	if r, _ := p.Complete(t.Context(), agent.ModelRequest{Messages: agent.UserMessages("hi")}); r.Settings != nil {
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
