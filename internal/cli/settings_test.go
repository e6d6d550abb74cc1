package cli_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/cli"
)

// TestModelSettingsDefaults: the model timeout defaults to 2m, the cut
// answer flag to off, and no models file means no settings; each is read
// when set.
func TestModelSettingsDefaults(t *testing.T) {
	t.Parallel()
	s, err := cli.LoadSettings(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if s.ModelTimeout != 2*time.Minute || s.FailOnCut || !s.ModelSettings.IsZero() {
		t.Fatalf("defaults: timeout %v, fail on cut %v, settings %s; want 2m, false, none", s.ModelTimeout, s.FailOnCut, s.ModelSettings)
	}
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(`{"openai:gpt-4o-mini": {"temperature": 0.2, "seed": 7}, "scripted": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTRUN_MODEL": "openai:gpt-4o-mini", "AGENTRUN_MODEL_TIMEOUT": "90s", "AGENTRUN_FAIL_ON_CUT_ANSWER": "1", "AGENTRUN_MODELS": path}
	s, err = cli.LoadSettings(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.ModelTimeout != 90*time.Second || !s.FailOnCut || s.ModelSettings.String() != "temperature=0.2 seed=7" {
		t.Fatalf("set: timeout %v, fail on cut %v, settings %s", s.ModelTimeout, s.FailOnCut, s.ModelSettings)
	}
}
