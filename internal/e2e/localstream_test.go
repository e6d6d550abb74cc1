package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestStarterLocalStreamPrintsText: starter --local --stream prints the
// model's text while the model writes it (the first piece of a 3 s answer
// seconds before the last), labelled with its step, then the recorded
// answer; without --stream the same run prints no text before it.
func TestStarterLocalStreamPrintsText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	answer := words(12) // 4 pieces of 3 words, 0.75 s apart
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"delay":"3s","text":"`+answer+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted:"+script)
	starter := testenv.Program(t, "starter")

	cmd := exec.CommandContext(t.Context(), starter, "--local", "--stream", "--id", "local-stream", "Check the VPN policy.")
	cmd.Env = env
	out := &timedBuffer{start: time.Now()}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		t.Fatalf("starter --local --stream: %v\n%s", err, out.text())
	}
	text := out.text()
	t.Logf("starter --local --stream:\n%s", text)
	live := strings.Index(text, "[llm/2] "+answer+"\n")
	done := strings.Index(text, "run local-stream: Completed\n"+answer)
	if live < 0 || done < 0 || live > done {
		t.Fatalf("want the line %q before the recorded answer", "[llm/2] "+answer)
	}
	if strings.Contains(text, "[llm/1]") || strings.Count(text, "[llm/") != 1 {
		t.Fatal("want one label, [llm/2], and none for llm/1 (no text)")
	}
	first, last := out.when("w03 "), out.when("w12")
	if last-first < time.Second {
		t.Fatalf("the answer's first piece was printed at %v and its last at %v: want them printed as they came, 2.25 s apart", first, last)
	}

	// The same script without --stream: the outcome only.
	code, plain := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "local-plain", "Check the VPN policy.")
	if code != 0 || strings.Contains(plain, "[llm/") || !strings.Contains(plain, "run local-plain: Completed\n"+answer) {
		t.Fatalf("starter --local: exit %d, want 0, the answer and no live text\n%s", code, plain)
	}
}

// timedBuffer collects a program's output and when each byte came.
type timedBuffer struct {
	start time.Time
	buf   bytes.Buffer
	at    []time.Duration // at[i]: when byte i came
}

func (b *timedBuffer) Write(p []byte) (int, error) {
	now := time.Since(b.start)
	for range p {
		b.at = append(b.at, now)
	}
	return b.buf.Write(p)
}

func (b *timedBuffer) text() string { return b.buf.String() }

// when is when s was first complete in the output, or -1 if it never was.
func (b *timedBuffer) when(s string) time.Duration {
	i := strings.Index(b.buf.String(), s)
	if i < 0 {
		return -1
	}
	return b.at[i+len(s)-1]
}
