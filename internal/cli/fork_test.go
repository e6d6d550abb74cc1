package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestForkLocal: the hand example run through the programs, then forked
// with reconcile --local: before its ticket it is refused in one line
// naming the write; after it, onto another scripted model, it answers
// anew with no new ticket; show prints its lineage; eval replays it and
// prints its drift and a summary with no tool execution.
func TestForkLocal(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	tickets := filepath.Join(dir, "tickets.jsonl")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", prompt); code != 3 {
		t.Fatalf("run: exit %d, want 3\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", "r1", ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1"); code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}

	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "fork", "r1", "--from", "llm/2")
	if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, ticketStep+" (returned TICKET-1)") || !strings.Contains(out, "--ack-writes") {
		t.Fatalf("fork before the ticket: exit %d, want 1 and one line naming the write\n%s", code, out)
	}

	script := filepath.Join(dir, "other.json")
	other := `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"database access"}}]},` +
		`{"tool_calls":[{"name":"create_ticket","args":{"title":"x","body":"y"}}]},{"text":"Filed as {{last_tool_result}}; expect an answer within a day."}]}`
	if err := os.WriteFile(script, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "fork", "r1", "--from", "llm/3", "--model", "scripted:"+script, "--id", "r1-b")
	if code != 0 || !strings.Contains(out, "run r1-b: a fork of run r1 from llm/3") || !strings.Contains(out, "Filed as TICKET-1; expect an answer within a day.") {
		t.Fatalf("fork after the ticket: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1-b")
	if code != 0 || !strings.Contains(out, "fork of run r1 from llm/3 (the steps before it are r1's, 2 model calls): model scripted:"+script) || strings.Contains(out, "tool/") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}

	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "eval", "--from", "llm/2", "--model", "scripted:"+script, "r1")
	if code != 0 || !strings.Contains(out, "of r1 from llm/2: departs at llm/2") || !strings.Contains(out, "1 call the origin did not make: create_ticket") ||
		!strings.Contains(out, "runs  departed  unchanged  tool executions\n   1         1          0                0\n") {
		t.Fatalf("eval: exit %d\n%s", code, out)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}
