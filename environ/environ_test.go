package environ_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/environ"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Stop()
	os.Exit(code)
}

// TestLoadOnATeamWorker: the programs' agent from their environment (a
// scripted model, the demo tools, a journal folder) on a team's worker
// that has a CallTool activity of its own: Load's Config registers beside
// it (no activity of the older builds' bare names), and a run looks the
// policy up with the demo lookup and answers.
func TestLoadOnATeamWorker(t *testing.T) {
	c := testenv.DevServer(t).Client
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	script, _ := json.Marshal(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)}}},
		{Text: "Found: " + llm.LastToolResult},
	}})
	scriptFile := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTRUN_MODEL": "scripted:" + scriptFile, "AGENTRUN_JOURNAL": filepath.Join(dir, "journal")}
	cfg, closeTools, err := environ.Load(ctx, func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	const queue = "environ-team"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterActivityWithOptions(func(context.Context) (string, error) { return "the team's", nil }, activity.RegisterOptions{Name: "CallTool"})
	if err := agentrun.Register(w, cfg); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	runs, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	run, err := runs.Start(ctx, agentrun.StartOptions{ID: "environ-1", Prompt: "Can I use the VPN?"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil || !strings.HasPrefix(res.Answer, "Found: ") || !strings.Contains(strings.ToLower(res.Answer), "vpn") || res.Steps != 3 {
		t.Fatalf("run: %+v, %v; want the demo lookup's VPN policy after 3 steps", res, err)
	}
}

// TestLoadRefused: a setting Load cannot use is one line naming the
// variable.
func TestLoadRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"AGENTRUN_MODEL", map[string]string{"AGENTRUN_MODEL": "nope", "AGENTRUN_JOURNAL": t.TempDir()}},
		{"AGENTRUN_MODEL", map[string]string{"AGENTRUN_MODEL": "scripted:/nonexistent.json", "AGENTRUN_JOURNAL": t.TempDir()}},
		{"AGENTRUN_TOOLS", map[string]string{"AGENTRUN_TOOLS": "/nonexistent-tools.json", "AGENTRUN_JOURNAL": t.TempDir()}},
	} {
		name, env := tc.name, tc.env
		_, _, err := environ.Load(t.Context(), func(k string) string { return env[k] }, nil)
		if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v; want one line naming %s", env, err, name)
		}
	}
}
