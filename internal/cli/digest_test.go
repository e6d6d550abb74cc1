package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
)

// digestScript is a run whose lookup result echoes control characters (an
// OSC that retitles the terminal, BEL, clear screen, a carriage return)
// and whose gated create_ticket call has 2 KiB of arguments, a line of
// backticks among them. It returns the script and the call's arguments as
// the model gives them.
func digestScript(t *testing.T) (script, args string) {
	t.Helper()
	body := "see below\n```\n" + strings.Repeat("0123456789abcdef", 128) // 2 KiB and more
	b, err := json.Marshal(map[string]string{"title": "Read access", "body": body})
	if err != nil {
		t.Fatal(err)
	}
	args = string(b)
	script = `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"\u001b]0;pwned\u0007\u001b[2J\rorders"}}]},` +
		`{"tool_calls":[{"name":"create_ticket","args":` + args + `}]},{"text":"Filed {{last_tool_result}}"}]}`
	return script, args
}

// digestOf is the digest of args as reconcile show prints it: "sha256:"
// and the first 16 hex digits of their SHA-256.
func digestOf(args string) string {
	sum := sha256.Sum256([]byte(args))
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

// TestApproveWhatYouSawLocal: on the local engine, reconcile show names the
// pending call's arguments digest and escapes the control characters a
// tool echoed; show --step prints its 2 KiB of arguments whole with that
// digest; an approve with another digest is refused in one line naming
// both and writes nothing; one with the digest shown is recorded, and the
// resumed run files exactly one ticket.
func TestApproveWhatYouSawLocal(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	script, args := digestScript(t)
	scriptFile := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "tickets.jsonl")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted:"+scriptFile)
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", prompt); code != 3 {
		t.Fatalf("run: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
	digest := digestOf(args)

	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1")
	if code != 0 || !strings.Contains(out, "    digest: "+digest+"\n") || !strings.Contains(out, "    whole args: "+reconcile+" --local show r1 --step "+ticketStep+"\n") {
		t.Fatalf("show: exit %d, want the digest %s and the command that shows the whole arguments:\n%s", code, digest, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step", hand.LookupStep)
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\r") || !strings.Contains(out, `\x1b]0;pwned\x07\x1b[2J\rorders`) {
		t.Fatalf("show --step tool/1/0/lookup: exit %d, want the tool's control characters escaped:\n%q", code, out)
	}

	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step", ticketStep)
	if code != 0 || !strings.Contains(out, "input: create_ticket("+args+")\n") || !strings.Contains(out, "digest: "+digest+" (") {
		t.Fatalf("show --step %s: exit %d, want the %d bytes of arguments whole and digest %s:\n%s", ticketStep, code, len(args), digest, out)
	}

	before := snapshot(t, dir)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approve", "r1", ticketStep, "--digest", "sha256:0000000000000000"}, 1,
			"approve: marker " + ticketStep + " has arguments " + digest + " pending, not sha256:0000000000000000 as given; look again with reconcile show RUN --step " + ticketStep},
		{[]string{"deny", "r1", ticketStep, "no", "--digest=sha256:0000000000000000"}, 1, "deny: marker " + ticketStep + " has arguments " + digest + " pending"},
		{[]string{"approve", "r1", ticketStep, "--digest", "abc"}, 2, `approve: --digest "abc": want "sha256:" followed by 16 lowercase hex digits`},
		{[]string{"approve", "r1", ticketStep, "--digest"}, 2, "approve: --digest needs a value"},
	} {
		code, out := testenv.Run(t, env, time.Minute, reconcile, append([]string{"--local"}, c.args...)...)
		if line := strings.TrimSpace(out); code != c.code || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
			t.Errorf("reconcile %q: exit %d, output %q; want exit %d and one line containing %q", c.args, code, out, c.code, c.want)
		}
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("refused decisions changed the folder:\nbefore\n%s\nafter\n%s", before, after)
	}

	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", "r1", ticketStep, "--digest", digest)
	if code != 0 || !strings.Contains(out, "recorded approve for run r1 ("+ticketStep+", arguments "+digest+")") {
		t.Fatalf("approve --digest: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1"); code != 0 || !regexp.MustCompile(`Filed TICKET-1\b`).MatchString(out) {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	ts, err := tools.ReadTickets(tickets)
	if err != nil || len(ts) != 1 || len(ts[0].Body) < 2048 {
		t.Fatalf("tickets %+v, %v; want one, with the whole body", ts, err)
	}
}
