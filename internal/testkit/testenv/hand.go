package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/tools"
)

// The test hooks that hold a tool call until the process is killed, set
// on a child process as NAME=TOOL: before the tool's effect, or after it
// and before its result is recorded.
const (
	HoldBefore = "AGENTRUN_TEST_HOLD_BEFORE"
	HoldAfter  = "AGENTRUN_TEST_HOLD_AFTER"
)

// The create_ticket declarations of the settle tests (overrides in a tools
// file, see ToolsFile): a probe by title (no key), and two probes that
// cannot tell: one whose expressions match nothing find_ticket answers,
// one whose arguments find_ticket refuses. The shipped
// tools/demo-tools.json declares a key and a probe by key.
var (
	ProbeByTitle = map[string]any{"probe": map[string]any{
		"tool": "find_ticket", "args": map[string]string{"title": "{{args.title}}"},
		"found": "^(TICKET-[0-9]+):", "not_found": "^no ticket",
	}}
	ProbeUnclear = map[string]any{"probe": map[string]any{
		"tool": "find_ticket", "args": map[string]string{"title": "{{args.title}}"},
		"found": "^(TICKET-[0-9]+) is filed$", "not_found": "^nothing filed$",
	}}
	ProbeRefused = map[string]any{"probe": map[string]any{
		"tool": "find_ticket", "args": map[string]string{"request_id": "req-1", "title": "{{args.title}}"},
		"found": "^(TICKET-[0-9]+):", "not_found": "^no ticket",
	}}
)

// ToolsFile writes a tools file declaring create_ticket's override (nil:
// the shipped tools/demo-tools.json) to a temporary folder and returns its
// path, for AGENTRUN_TOOLS.
func ToolsFile(t testing.TB, override map[string]any) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.Root(), "tools", "demo-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if override != nil {
		if b, err = json.Marshal(map[string]any{"tools": map[string]any{"create_ticket": override}}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// CountTickets returns the number of demo tickets in the tickets file
// path (none when it does not exist yet).
func CountTickets(path string) (int, error) {
	ts, err := tools.ReadTickets(path)
	return len(ts), err
}

// Tickets returns the demo tickets filed in the tickets file path (none
// when it does not exist yet).
func Tickets(t testing.TB, path string) []tools.Ticket {
	t.Helper()
	ts, err := tools.ReadTickets(path)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TicketCount returns the number of demo tickets in the tickets file path.
func TicketCount(t testing.TB, path string) int {
	t.Helper()
	n, err := CountTickets(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// HoldLine is the line a process logs once a hold (HoldBefore or
// HoldAfter) stops it in tool.
func HoldLine(hold, tool string) string {
	where := "after"
	if hold == HoldBefore {
		where = "before"
	}
	return "hold " + where + " " + tool + ": waiting to be killed"
}

// AwaitHold waits up to timeout until p logs that the hold stops it in
// tool; the test fails when p exits first.
func AwaitHold(t testing.TB, p *Proc, hold, tool string, timeout time.Duration) {
	t.Helper()
	line := HoldLine(hold, tool)
	name := filepath.Base(p.Cmd.Path)
	WaitFor(t, timeout, "the "+name+" to log "+line, func() bool {
		if !p.Running() {
			t.Fatalf("the %s exited:\n%s", name, p.Output())
		}
		return strings.Contains(p.Output(), line)
	})
}

// CrashInTicket crashes p, a starter --local or a worker started with
// hold=create_ticket, at its hold point: it waits until p holds the hand
// example's create_ticket, checks that the tickets file holds no ticket
// before the effect and one after it, and SIGKILLs p.
func CrashInTicket(t testing.TB, p *Proc, hold, tickets string) {
	t.Helper()
	AwaitHold(t, p, hold, "create_ticket", time.Minute)
	where, want := "after", 1
	if hold == HoldBefore {
		where, want = "before", 0
	}
	name := filepath.Base(p.Cmd.Path)
	if n := TicketCount(t, tickets); n != want {
		t.Fatalf("tickets while the %s holds create_ticket %s its effect: %d, want %d", name, where, n, want)
	}
	p.Kill(t)
	t.Logf("SIGKILLed the %s holding create_ticket %s its effect", name, where)
}

// Describe renders journal records as "type step kind", leaving out what
// is empty, with " idempotent" for an idempotent step.
func Describe(recs []journal.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = strings.Join(strings.Fields(string(r.Type)+" "+r.Step+" "+string(r.Kind)), " ")
		if r.Idempotent {
			out[i] += " idempotent"
		}
	}
	return out
}

// MustJSON returns v in JSON; it panics when v cannot be encoded.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}

// SettledTicket checks the tickets file of a hand example run whose
// create_ticket was settled without a person: it holds exactly the one
// ticket. It returns want with what the run derived filled in: when the
// write declares a key (keyed), the ticket carries the run's idempotency
// key (runKey is the run's key: its id locally, its first run id on
// Temporal), which want.Key takes and a not-found probe's answer names;
// otherwise the ticket has no request id.
func SettledTicket(t testing.TB, tickets string, want agent.Settled, keyed bool, runKey string) agent.Settled {
	t.Helper()
	ts, err := tools.ReadTickets(tickets)
	if err != nil || len(ts) != 1 || ts[0].Title != hand.TicketTitle {
		t.Fatalf("tickets %+v, %v; want exactly 1, %q", ts, err, hand.TicketTitle)
	}
	if !keyed {
		if ts[0].RequestID != "" {
			t.Fatalf("the ticket has request_id %q, want none: the write declares no key", ts[0].RequestID)
		}
		return want
	}
	key := agent.IdempotencyKey(runKey, hand.TicketStep, 1)
	want.Key = key
	if ts[0].RequestID != key || !strings.HasPrefix(key, "agentrun-") {
		t.Fatalf("the ticket's request_id %q, want the run's key %s", ts[0].RequestID, key)
	}
	if want.Probe != nil && want.Probe.Verdict == agent.ProbeNotFound {
		p := *want.Probe
		p.Answer = "no ticket with request_id " + key
		want.Probe = &p
	}
	return want
}
