package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
)

// TestLocalChildApprovedThroughParent: the planner of a tools file with
// one agent tool ("filer", its own scripted model) run by the real
// starter --local and reconcile --local on a folder journal: the child's
// approval stops the starter AwaitingApproval (exit 3) with the command
// that approves it on the parent, reconcile show of the parent names the
// child run and its marker, reconcile approve PARENT MARKER reaches the
// child, and a resumed starter completes the tree: 1 ticket, 2 model calls
// in each run's journal, the parent's usage the sum of both.
func TestLocalChildApprovedThroughParent(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	env, tickets, store := childTree(t)
	const run, marker = "planner-e2e", "tool/1/0/create_ticket"
	child := agent.ChildRunID(run, "tool/1/0/filer")

	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, "Get me read access to the orders database.")
	if code != 3 || !strings.Contains(out, "run "+run+": AwaitingApproval") || !strings.Contains(out, "approve: "+reconcile+" --local approve "+run+" "+marker) {
		t.Fatalf("starter: exit %d, want 3 and the approve command on the parent\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	if code != 0 || !strings.Contains(out, "child run "+child) || !strings.Contains(out, "marker "+marker) {
		t.Fatalf("show parent: exit %d, want it to name child run %s and marker %s\n%s", code, child, marker, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", run, marker)
	if code != 0 || !strings.Contains(out, "recorded approve") {
		t.Fatalf("approve through the parent: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", run)
	if code != 0 || !strings.Contains(out, "run "+run+": Completed") || !strings.Contains(out, "The filer says: Filed as") {
		t.Fatalf("resumed starter: exit %d, want 0 and Completed\n%s", code, out)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	var sum agent.Usage
	for _, id := range []string{run, child} {
		recs, err := store.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Type == journal.StepCompleted && strings.HasPrefix(r.Step, "llm/") {
				reply, err := agent.DecodeModelReply(r.Result)
				if err != nil {
					t.Fatal(err)
				}
				n, sum = n+1, sum.Add(reply.Usage)
			}
		}
		if n != 2 {
			t.Errorf("run %s: %d model calls, want 2", id, n)
		}
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	want := fmt.Sprintf("budget: 4 of %d model calls; %d tokens (%d input, %d output)", agent.DefaultMaxTurns, sum.Total(), sum.InputTokens, sum.OutputTokens)
	if code != 0 || sum.Total() == 0 || !strings.Contains(out, want) {
		t.Errorf("show of the completed parent: exit %d, want %q (both runs' calls and tokens)\n%s", code, want, out)
	}
}

// childTree writes the planner's and the filer's scripts and a tools file
// declaring the filer, and returns the programs' environment over a folder
// journal, the tickets file and the journal as the test reads it.
func childTree(t *testing.T) (env []string, tickets string, store journal.Store) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	planner := write("planner.json", `{"turns":[{"tool_calls":[{"name":"filer","args":{"task":"File a ticket for read access to the orders database."}}]},{"text":"The filer says: {{last_tool_result}}"}]}`)
	filer := write("filer.json", `{"turns":[{"tool_calls":[{"name":"create_ticket","args":{"title":"Read access to the orders database","body":"Filed by the filer agent."}}]},{"text":"Filed as {{last_tool_result}}"}]}`)
	toolsFile := write("tools.json", `{"agents":{"filer":{"description":"Files tickets.","system":"You file tickets.","tools":["create_ticket"],"model":"scripted:`+filer+`"}}}`)
	where := filepath.Join(dir, "journal")
	tickets = filepath.Join(dir, "tickets.jsonl")
	env = append(os.Environ(), "AGENTRUN_JOURNAL="+where, "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted:"+planner, "AGENTRUN_TOOLS="+toolsFile)
	cdc, err := testenv.SuiteCodec()
	if err != nil {
		t.Fatal(err)
	}
	var seal journal.Sealer
	if cdc != nil {
		seal = cdc
	}
	store, err = journal.NewSealedFileStore(where, seal)
	if err != nil {
		t.Fatal(err)
	}
	return env, tickets, store
}

// TestLocalChildFollowed: starter --local --follow of the planner waits on
// the filer's approval; reconcile --local approve sent to the planner, from
// another process, lands in the child's journal and wakes the follower,
// which drives the tree to its end: exit 0, 1 ticket.
func TestLocalChildFollowed(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	env, tickets, _ := childTree(t)
	const run, marker = "planner-follow", "tool/1/0/create_ticket"
	p := testenv.Start(t, env, starter, "--local", "--follow", "--id", run, "Get me read access to the orders database.")
	if err := p.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	if !p.Logged("run "+run+": AwaitingApproval") || !p.Logged("approve: "+reconcile+" --local approve "+run+" "+marker) {
		t.Fatalf("the follower does not say it waits on the child's marker:\n%s", p.Output())
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", run, marker)
	if code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code := p.Wait(t, time.Minute); code != 0 || !p.Logged("run "+run+": Completed") {
		t.Fatalf("the follower: exit %d, want 0 and Completed\n%s", code, p.Output())
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}
