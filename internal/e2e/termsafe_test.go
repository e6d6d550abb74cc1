package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// hostileText is a model answer that would drive a terminal printed raw:
// a window title (OSC 0, ended by BEL), the clipboard (OSC 52), a line
// erased (CSI 2K), an 8-bit CSI (U+009B) clearing the screen, and bidi
// controls reordering the line.
const hostileText = "title\x1b]0;pwned\x07 clip\x1b]52;c;ZXZpbA==\x07 erase\x1b[2K csi\u009b2J bidi\u202eevil\u2066 marks\u200f end"

// rawControls are what must never reach the terminal; escapedControls
// what the programs print in their place, each once per printing of the
// text.
var (
	rawControls     = []string{"\x1b", "\x07", "\u009b", "\u202e", "\u2066", "\u200f"}
	escapedControls = []string{`title\x1b]0;pwned\x07`, `clip\x1b]52;c;ZXZpbA==\x07`, `erase\x1b[2K`, `csi\u009b2J`, `bidi\u202eevil\u2066`, `marks\u200f`}
)

// hostileScript writes a script whose every turn answers hostileText
// (with the turn's number), each written over a second (a stream
// of several pieces), and returns its AGENTRUN_MODEL setting.
func hostileScript(t *testing.T, turns int) string {
	t.Helper()
	var s llm.Script
	for i := range turns {
		s.Turns = append(s.Turns, llm.Turn{Delay: "1s", Text: hostileText + " turn " + string(rune('1'+i))})
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hostile.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "AGENTRUN_MODEL=scripted:" + path
}

// checkEscaped fails the test when out (a program's stdout and stderr)
// holds a raw control of the hostile text, or fewer than n escaped copies
// of it.
func checkEscaped(t *testing.T, what, out string, n int) {
	t.Helper()
	for _, raw := range rawControls {
		if strings.Contains(out, raw) {
			t.Errorf("%s printed the raw %q:\n%q", what, raw, out)
		}
	}
	for _, esc := range escapedControls {
		if got := strings.Count(out, esc); got < n {
			t.Errorf("%s printed %q %d times, want %d:\n%q", what, esc, got, n, out)
		}
	}
}

// TestLocalProgramsPrintControlsEscaped: a model whose answer holds ESC,
// BEL, OSC 52, a C1 CSI and bidi controls reaches the terminal escaped,
// as reconcile show prints it, from starter --local (the outcome), from
// starter --local --stream (the streamed pieces and the outcome), from a
// session's driver and from reconcile --local message --wait (the answer
// of the driver that follows the session).
func TestLocalProgramsPrintControlsEscaped(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), hostileScript(t, 2))

	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "hostile-plain", "hi")
	if code != 0 || !strings.Contains(out, "run hostile-plain: Completed\ntitle") {
		t.Fatalf("starter --local: exit %d\n%s", code, out)
	}
	checkEscaped(t, "starter --local", out, 1)

	code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--stream", "--id", "hostile-stream", "hi")
	if code != 0 || !strings.Contains(out, "[llm/1] title") {
		t.Fatalf("starter --local --stream: exit %d\n%s", code, out)
	}
	checkEscaped(t, "starter --local --stream", out, 2) // the pieces, then the outcome

	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "hostile-plain")
	if code != 0 {
		t.Fatalf("reconcile --local show: exit %d\n%s", code, out)
	}
	checkEscaped(t, "reconcile --local show", out, 1)

	const run = "hostile-session"
	p := testenv.Start(t, env, starter, "--local", "--session", "--id", run, "hi")
	if err := p.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.Output()) // the last line before it waits for a message
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "message", run, "more", "--wait")
	if code != 0 || !strings.Contains(out, "turn 2") {
		t.Fatalf("reconcile --local message --wait: exit %d\n%s", code, out)
	}
	checkEscaped(t, "reconcile --local message --wait", out, 1)
	p.Stop(10 * time.Second)
	checkEscaped(t, "starter --local --session", p.Output(), 2) // both answers
}

// TestRemoteProgramsPrintControlsEscaped: the same answer on Temporal
// reaches the terminal escaped from starter --wait (the streamed text
// and the outcome) and from reconcile message --wait (a session's second
// answer, streamed and as the outcome).
func TestRemoteProgramsPrintControlsEscaped(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(hostileScript(t, 2))
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")

	code, out := testenv.Run(t, env, time.Minute, starter, "--id", "e2e-hostile-wait", "--wait", "hi")
	if code != 0 || !strings.Contains(out, "[llm/1] title") || !strings.Contains(out, "run e2e-hostile-wait: Completed") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	checkEscaped(t, "starter --wait", out, 2)

	const run = "e2e-hostile-session"
	code, out = testenv.Run(t, env, time.Minute, starter, "--id", run, "--session", "--wait", "hi")
	if code != 0 || !strings.Contains(out, "run "+run+": Idle") {
		t.Fatalf("starter --session --wait: exit %d\n%s", code, out)
	}
	checkEscaped(t, "starter --session --wait", out, 2)
	code, out = testenv.Run(t, env, time.Minute, reconcile, "message", run, "more", "--wait")
	if code != 0 || !strings.Contains(out, "[llm/2] title") || !strings.Contains(out, "turn 2") {
		t.Fatalf("reconcile message --wait: exit %d\n%s", code, out)
	}
	checkEscaped(t, "reconcile message --wait", out, 2)
}
