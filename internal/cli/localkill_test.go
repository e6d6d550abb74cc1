package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/tools"
)

// TestKillResumesWithoutRecall runs the hand example in five starter
// processes in turn on one journal, SIGKILLs one inside lookup (a read,
// which leaves no record until it completes) and one inside create_ticket
// after the ticket exists, and checks that the run completes with exactly
// 3 model calls and 1 ticket.
func TestKillResumesWithoutRecall(t *testing.T) {
	t.Parallel()
	starter := testenv.Program(t, "starter")
	reconcile := testenv.Program(t, "reconcile")
	dir := t.TempDir()
	jdir, tickets := filepath.Join(dir, "journal"), filepath.Join(dir, "tickets.jsonl")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+jdir, "AGENTRUN_TICKETS="+tickets, "AGENTRUN_DEMO_DELAY=3s", "AGENTRUN_MODEL=scripted")
	const run = "kill-1"
	store, err := journal.NewFileStore(jdir)
	if err != nil {
		t.Fatal(err)
	}
	recorded := func(typ journal.RecordType, step string) int {
		recs, err := store.Load(run)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Step == step && r.Type == typ {
				n++
			}
		}
		return n
	}
	started := func(step string) bool { // started and not completed
		return recorded(journal.StepStarted, step) > 0 && recorded(journal.StepCompleted, step) == 0
	}
	startProc := func() *testenv.Proc {
		return testenv.Start(t, env, starter, "--local", "--id", run, prompt)
	}
	runProc := func(wantCode int) string {
		t.Helper()
		code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, prompt)
		if code != wantCode {
			t.Fatalf("starter exited %d, want %d:\n%s", code, wantCode, out)
		}
		return out
	}
	operator := func(args ...string) {
		t.Helper()
		if code, out := testenv.Run(t, env, time.Minute, reconcile, append([]string{"--local"}, args...)...); code != 0 {
			t.Fatalf("reconcile %v: exit %d\n%s", args, code, out)
		}
	}

	// 1: killed inside lookup, which runs (for AGENTRUN_DEMO_DELAY) once
	// llm/1 is recorded. A read has no start record: the kill leaves
	// nothing of it.
	p1 := startProc()
	testenv.WaitFor(t, 30*time.Second, "llm/1 to complete", func() bool { return recorded(journal.StepCompleted, "llm/1") > 0 })
	p1.Kill(t)
	if n := recorded(journal.StepStarted, hand.LookupStep) + recorded(journal.StepCompleted, hand.LookupStep); n != 0 {
		t.Fatalf("the killed lookup left %d records, want 0", n)
	}
	// 2: re-runs lookup, stops awaiting approval.
	out := runProc(3)
	// The printed command names reconcile as it sits beside this starter,
	// and works as printed.
	approve := reconcile + " --local approve kill-1 tool/2/0/create_ticket"
	if !strings.Contains(out, "approve: "+approve+"\n") || !strings.Contains(out, "then resume the run: "+starter+" --local --id kill-1\n") {
		t.Fatalf("the awaiting run does not print the approve and resume commands:\n%s", out)
	}
	if code, b := testenv.Run(t, env, time.Minute, "sh", "-c", approve); code != 0 {
		t.Fatalf("the printed command %s: exit %d\n%s", approve, code, b)
	}
	// 3: killed inside create_ticket, after the ticket exists.
	p3 := startProc()
	testenv.WaitFor(t, 30*time.Second, "the ticket to be written", func() bool {
		ts, err := tools.ReadTickets(tickets)
		return err == nil && len(ts) == 1
	})
	if !started(ticketStep) {
		t.Fatal("create_ticket is not in flight when the ticket exists")
	}
	p3.Kill(t)
	// 4: Indeterminate.
	out = runProc(4)
	if !strings.Contains(out, "Indeterminate at "+ticketStep) {
		t.Fatalf("run 4 output:\n%s", out)
	}
	ts, err := tools.ReadTickets(tickets)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tickets: %v %v, want 1", ts, err)
	}
	operator("done", run, ticketStep, ts[0].ID)
	// 5: completes with the reconciled ticket.
	out = runProc(0)
	if !strings.Contains(out, "Completed") || !strings.Contains(out, ts[0].ID) {
		t.Fatalf("run 5 output:\n%s", out)
	}

	recs, err := store.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	count := func(typ journal.RecordType, prefix string) int {
		n := 0
		for _, r := range recs {
			if r.Type == typ && strings.HasPrefix(r.Step, prefix) {
				n++
			}
		}
		return n
	}
	// Model and read steps record only their results; no process was
	// killed inside a model call, so these count the calls.
	if n := count(journal.StepCompleted, "llm/"); n != 3 {
		t.Errorf("model results: %d, want 3", n)
	}
	if n := count(journal.StepStarted, "llm/") + count(journal.StepStarted, hand.LookupStep); n != 0 {
		t.Errorf("start records of model and read steps: %d, want 0", n)
	}
	if n := count(journal.StepCompleted, hand.LookupStep); n != 1 {
		t.Errorf("lookup results: %d, want 1 (recorded by the run after the kill)", n)
	}
	if n := count(journal.StepStarted, ticketStep); n != 1 {
		t.Errorf("create_ticket starts: %d, want 1", n)
	}
	if n := count(journal.StepCompleted, ticketStep); n != 1 {
		t.Errorf("create_ticket results: %d, want 1 (the person's)", n)
	}
	want := []string{"run.started", "step.completed llm/1 model", "step.completed tool/1/0/lookup read", "step.completed llm/2 model",
		"signal", "step.started " + ticketStep + " write", "signal", "step.completed " + ticketStep + " write",
		"step.completed llm/3 model", "run.completed"}
	if got := testenv.Describe(recs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records:\n got %q\nwant %q", got, want)
	}
	if ts, _ := tools.ReadTickets(tickets); len(ts) != 1 {
		t.Errorf("tickets: %d, want 1", len(ts))
	}
}
