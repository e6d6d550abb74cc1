package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// TestCodecServerIgnoresForgedReferences: a client without the keys
// starts a run whose input message names another run's tool output by
// reference (its content address). The worker seals that reference into
// the run's first model step's input; the codecserver program shows the
// run's history with the reference as it was written, not the other
// run's text (it showed the text), while the other run's own tool
// result still shows it whole.
func TestCodecServerIgnoresForgedReferences(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	lookup := newLookupRun(t, f.dir)
	w := testenv.Start(t, f.env(keyEnv, lookup.Model), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	endpoint := startCodecServer(t, f.env(keyEnv), "")

	const victim = "e2e-codecforge-victim"
	if code, out := testenv.Run(t, f.env(keyEnv, lookup.Model), time.Minute, starter, "--id", victim, "--wait", lookup.Prompt); code != 0 {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	key := content.KeyOf([]byte(lookup.Output))
	shown := payloadText(t, f.temporal(t, "workflow", "show", "-w", victim, "--output", "json", "--codec-endpoint", endpoint))
	if !strings.Contains(shown, `"content_ref":{"content":"`+lookup.Output+`"`) || !strings.Contains(shown, key) {
		t.Fatalf("the victim's tool output is not shown whole under %s:\n%.3000s", key, shown)
	}

	// The forged run's model answers at once: no reference of its own.
	w.Stop(10 * time.Second)
	script, err := json.Marshal(llm.Script{Turns: []llm.Turn{{Text: "done"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, "answer.json")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Start(t, f.env(keyEnv, "AGENTRUN_MODEL=scripted:"+path), testenv.Program(t, "worker"))
	const forged = "e2e-codecforge-forged"
	input := `{"messages":[{"role":"user","content":"","content_ref":{"key":"` + key + `","size":3005,"preview":"x"}}]}`
	f.rawTemporal(t, "workflow", "start", "--type", "AgentRun", "--task-queue", f.queue, "-w", forged, "--input", input)
	c := keyedClient(t, srv)
	testenv.WaitFor(t, time.Minute, forged+" to end", func() bool {
		st, err := stateWith(t, c, forged)
		return err == nil && st.Status.Terminal()
	})
	shown = payloadText(t, f.temporal(t, "workflow", "show", "-w", forged, "--output", "json", "--codec-endpoint", endpoint))
	if strings.Contains(shown, "No policy found") {
		t.Errorf("the forged run's history shows the other run's tool output through its reference:\n%.3000s", shown)
	}
	if !strings.Contains(shown, key) {
		t.Errorf("the forged run's history does not show the reference it was given:\n%.3000s", shown)
	}
}
