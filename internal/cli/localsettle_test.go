package cli_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
)

// TestSettleKillLocal runs the hand example with starter --local, SIGKILLs
// the process holding create_ticket before or after the ticket is filed,
// and resumes the run with a second starter --local. The write declares
// how it is settled (in a tools file): a probe that finds the ticket, a
// probe that finds none so the write runs once more, or an idempotency key
// the ticket store deduplicates on. The run completes without a person:
// 1 ticket, 3 model calls, never Indeterminate, and the journal records
// the probe's answer and a result that says how the write was settled.
func TestSettleKillLocal(t *testing.T) {
	t.Parallel()
	const (
		started   = "step.started " + ticketStep + " write"
		probed    = "step.probed " + ticketStep
		completed = "step.completed " + ticketStep + " write"
	)
	for _, tc := range []struct {
		name     string
		override map[string]any // nil: tools/demo-tools.json
		hold     string
		keyed    bool
		want     agent.Settled // Key filled in when keyed
		records  []string      // the create_ticket records after its approval
	}{
		{"ProbeFoundAfterEffect", testenv.ProbeByTitle, testenv.HoldAfter, false, agent.Settled{By: agent.SettledByProbe,
			Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeFound, Answer: "TICKET-1: " + hand.TicketTitle}, Runs: 1},
			[]string{started, probed, completed}},
		{"ProbeNotFoundBeforeEffect", nil, testenv.HoldBefore, true, agent.Settled{By: agent.SettledByProbe,
			Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeNotFound}, Runs: 2},
			[]string{started, probed, started, completed}},
		{"KeyAfterEffect", map[string]any{"idempotency_key": "request_id"}, testenv.HoldAfter, true,
			agent.Settled{By: agent.SettledByKey, Runs: 2},
			[]string{started, started, completed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocalRun(t, tc.override, "settle-"+strings.ToLower(tc.name))
			l.crashInTicket(t, tc.hold)

			code, out := l.starter(t)
			if code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "TICKET-1") {
				t.Fatalf("the resumed run: exit %d, want 0, Completed naming TICKET-1:\n%s", code, out)
			}
			want := testenv.SettledTicket(t, l.tickets, tc.want, tc.keyed, l.run)

			recs := l.records(t)
			l.checkRecords(t, recs, tc.records)
			for _, r := range recs {
				switch {
				case r.Type == journal.StepProbed && (r.Probe == nil || !reflect.DeepEqual(*r.Probe, *want.Probe)):
					t.Errorf("step.probed record: %s, want probe %s", testenv.MustJSON(r.Probe), testenv.MustJSON(want.Probe))
				case r.Type == journal.StepCompleted && r.Step == ticketStep:
					res, err := agent.DecodeToolResult(r.Result)
					if err != nil || res.Content != "TICKET-1" || res.Settled == nil || !reflect.DeepEqual(*res.Settled, want) {
						t.Errorf("create_ticket's result %s (%v); want TICKET-1 settled %s", r.Result, err, testenv.MustJSON(want))
					}
				}
			}
		})
	}
}

// TestSettleKillLocalProbeUnknown: the process holding create_ticket
// after the ticket is filed is SIGKILLed, and the write's probe cannot
// tell (its expressions match neither of find_ticket's answers, or
// find_ticket refuses its arguments). The resumed run is Indeterminate as
// without a probe, the journal records the probe's answer once (a third
// process does not ask again), and reconcile done completes the run as
// before: 1 ticket, 3 model calls. The probe's answer is printed where
// the run stops and by reconcile show.
func TestSettleKillLocalProbeUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		override map[string]any
		answer   string
	}{
		{"Unclear", testenv.ProbeUnclear, "it matches neither found nor not_found: TICKET-1: " + hand.TicketTitle},
		{"Refused", testenv.ProbeRefused, `an error: find_ticket wants {"request_id": "..."} or {"title": "..."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLocalRun(t, tc.override, "settle-unknown-"+strings.ToLower(tc.name))
			l.crashInTicket(t, testenv.HoldAfter)

			// The person sees the probe's answer where the run stops and in
			// show; the second run does not ask the probe again.
			why := "\n  probe find_ticket answered unknown: " + tc.answer + "\n"
			for range 2 {
				code, out := l.starter(t)
				if code != 4 || !strings.Contains(out, "Indeterminate at "+ticketStep) || !strings.Contains(out, why) {
					t.Fatalf("the resumed run: exit %d, want 4, Indeterminate at %s with %q:\n%s", code, ticketStep, why, out)
				}
			}
			if out := l.reconcile(t, "show", l.run); !strings.Contains(out, "Indeterminate") || !strings.Contains(out, why) {
				t.Fatalf("reconcile show lacks %q:\n%s", why, out)
			}
			wantProbe := agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeUnknown, Answer: tc.answer}
			for _, r := range l.records(t) {
				if r.Type == journal.StepProbed && (r.Probe == nil || !reflect.DeepEqual(*r.Probe, wantProbe)) {
					t.Fatalf("step.probed record: %s, want probe %s", testenv.MustJSON(r.Probe), testenv.MustJSON(wantProbe))
				}
			}
			if n := l.ticketCount(t); n != 1 {
				t.Fatalf("tickets: %d, want 1", n)
			}
			l.reconcile(t, "done", l.run, ticketStep, "TICKET-1")
			code, out := l.starter(t)
			if code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "TICKET-1") {
				t.Fatalf("the reconciled run: exit %d, want 0, Completed naming TICKET-1:\n%s", code, out)
			}
			recs := l.records(t)
			l.checkRecords(t, recs, []string{"step.started " + ticketStep + " write", "step.probed " + ticketStep, "signal", "step.completed " + ticketStep + " write"})
			for _, r := range recs {
				if r.Type == journal.StepCompleted && r.Step == ticketStep {
					if res, err := agent.DecodeToolResult(r.Result); err != nil || res.Settled != nil {
						t.Errorf("create_ticket's result %s (%v); want the person's, not settled without one", r.Result, err)
					}
				}
			}
			if n := l.ticketCount(t); n != 1 {
				t.Fatalf("tickets: %d, want 1", n)
			}
		})
	}
}

// localRun is one local run of the hand example with its journal, ticket
// store and tools file in a temporary folder.
type localRun struct {
	run, tickets string
	store        *journal.FileStore
	env          []string
}

func newLocalRun(t *testing.T, override map[string]any, run string) *localRun {
	t.Helper()
	dir := t.TempDir()
	toolsFile := testenv.ToolsFile(t, override)
	l := &localRun{run: run, tickets: filepath.Join(dir, "tickets.jsonl")}
	jdir := filepath.Join(dir, "journal")
	var err error
	if l.store, err = journal.NewFileStore(jdir); err != nil {
		t.Fatal(err)
	}
	l.env = append(os.Environ(), "AGENTRUN_JOURNAL="+jdir, "AGENTRUN_TICKETS="+l.tickets, "AGENTRUN_MODEL=scripted", "AGENTRUN_TOOLS="+toolsFile)
	return l
}

func (l *localRun) starter(t *testing.T, env ...string) (int, string) {
	t.Helper()
	return testenv.Run(t, append(append([]string{}, l.env...), env...), time.Minute, testenv.Program(t, "starter"), "--local", "--id", l.run, prompt)
}

func (l *localRun) reconcile(t *testing.T, args ...string) string {
	t.Helper()
	code, out := testenv.Run(t, l.env, time.Minute, testenv.Program(t, "reconcile"), append([]string{"--local"}, args...)...)
	if code != 0 {
		t.Fatalf("reconcile %v: exit %d\n%s", args, code, out)
	}
	return out
}

// crashInTicket runs the hand example up to its approval, approves the
// ticket, starts a starter --local that holds create_ticket (hold is the
// hold variable: before or after its effect) and SIGKILLs it while it
// holds. The journal then holds create_ticket's start and no result.
func (l *localRun) crashInTicket(t *testing.T, hold string) {
	t.Helper()
	if code, out := l.starter(t); code != 3 || !strings.Contains(out, "AwaitingApproval") {
		t.Fatalf("the first run: exit %d, want 3, AwaitingApproval:\n%s", code, out)
	}
	l.reconcile(t, "approve", l.run, ticketStep)
	p := testenv.Start(t, append(append([]string{}, l.env...), hold+"=create_ticket"), testenv.Program(t, "starter"), "--local", "--id", l.run, prompt)
	testenv.CrashInTicket(t, p, hold, l.tickets)
	recs := l.records(t)
	if got := testenv.Describe(recs[len(recs)-1:]); got[0] != "step.started "+ticketStep+" write" {
		t.Fatalf("the journal ends with %q, want create_ticket's start", got)
	}
}

func (l *localRun) records(t *testing.T) []journal.Record {
	t.Helper()
	recs, err := l.store.Load(l.run)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (l *localRun) ticketCount(t *testing.T) int {
	t.Helper()
	return testenv.TicketCount(t, l.tickets)
}

// checkRecords checks the run's records: the hand example's, with
// ticket the records of create_ticket after its approval. The model's
// three results are its three calls: no process was killed inside one.
func (l *localRun) checkRecords(t *testing.T, recs []journal.Record, ticket []string) {
	t.Helper()
	want := append([]string{"run.started", "step.completed llm/1 model", "step.completed tool/1/0/lookup read", "step.completed llm/2 model", "signal"},
		ticket...)
	want = append(want, "step.completed llm/3 model", "run.completed")
	if got := testenv.Describe(recs); !reflect.DeepEqual(got, want) {
		t.Errorf("records:\n got %q\nwant %q", got, want)
	}
}

// TestSettleKillLocalMCPProbe: starter --local is SIGKILLed after the
// memory server's create_entities (a write, not idempotent) took effect and
// before its result was recorded. The write declares a probe on the
// server's open_nodes; the resumed run asks it, it finds the entity, and
// the step completes with the entity's name without running again: the
// memory file holds the entity once and is the file the killed call wrote,
// 2 model calls, and the result says settled by probe, found.
func TestSettleKillLocalMCPProbe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	memFile := filepath.Join(dir, "memory.jsonl")
	cfg := map[string]any{
		"demo":    map[string]bool{"lookup": false, "create_ticket": false, "find_ticket": false},
		"servers": []any{map[string]any{"name": "memory", "command": mcptest.Bin(t, mcptest.Memory), "env": map[string]string{"MEMORY_FILE_PATH": memFile}}},
		"tools": map[string]any{"create_entities": map[string]any{"approval": "never", "probe": map[string]any{
			"tool": "open_nodes", "args": map[string]any{"names": []string{"{{args.entities.0.name}}"}},
			// open_nodes answers {"entities": [...], "relations": [...]},
			// pretty-printed; an absent name leaves the list empty.
			"found": `"entities": \[\s*\{\s*"name": "([^"]+)"`, "not_found": `"entities": \[\]`,
		}}},
	}
	const script = `{"turns": [
		{"tool_calls": [{"name": "create_entities", "args": {"entities": [{"name": "agentrun-e2e", "entityType": "project", "observations": ["durable agent runs"]}]}}]},
		{"text": "Stored: {{last_tool_result}}"}
	]}`
	toolsFile, scriptFile := filepath.Join(dir, "tools.json"), filepath.Join(dir, "script.json")
	for file, text := range map[string]string{toolsFile: testenv.MustJSON(cfg), scriptFile: script} {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jdir := filepath.Join(dir, "journal")
	store, err := journal.NewFileStore(jdir)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+jdir, "AGENTRUN_TOOLS="+toolsFile, "AGENTRUN_MODEL=scripted:"+scriptFile)
	const (
		run    = "settle-mcp"
		step   = "tool/1/0/create_entities"
		entity = `{"type":"entity","name":"agentrun-e2e","entityType":"project","observations":["durable agent runs"]}`
	)
	memory := func() os.FileInfo { // the file holds exactly entity; its identity
		t.Helper()
		b, err := os.ReadFile(memFile)
		if err != nil || string(b) != entity {
			t.Fatalf("memory file %q, %v; want exactly %s", b, err, entity)
		}
		fi, err := os.Stat(memFile)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}

	starter := testenv.Program(t, "starter")
	p := testenv.Start(t, append(append([]string{}, env...), "AGENTRUN_TEST_HOLD_AFTER=create_entities"), starter, "--local", "--id", run, "Keep the knowledge graph up to date.")
	testenv.AwaitHold(t, p, testenv.HoldAfter, "create_entities", time.Minute)
	written := memory()
	p.Kill(t)

	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, "Keep the knowledge graph up to date.")
	if code != 0 || !strings.Contains(out, "Completed\nStored: agentrun-e2e\n") {
		t.Fatalf("the resumed run: exit %d, want 0, Completed with Stored: agentrun-e2e:\n%s", code, out)
	}
	if now := memory(); !os.SameFile(written, now) {
		t.Fatalf("the memory file was rewritten after the kill: create_entities ran again")
	}
	recs, err := store.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	wantRecs := []string{"run.started", "step.completed llm/1 model", "step.started " + step + " write", "step.probed " + step,
		"step.completed " + step + " write", "step.completed llm/2 model", "run.completed"}
	if got := testenv.Describe(recs); !reflect.DeepEqual(got, wantRecs) {
		t.Fatalf("records:\n got %q\nwant %q", got, wantRecs)
	}
	want := agent.Settled{By: agent.SettledByProbe, Runs: 1, Probe: &agent.ProbeAnswer{Tool: "open_nodes", Verdict: agent.ProbeFound,
		Answer: `{ "entities": [ { "name": "agentrun-e2e", "entityType": "project", "observations": [ "durable agent runs" ] } ], "relations": [] }`}}
	for _, r := range recs {
		if r.Type == journal.StepCompleted && r.Step == step {
			res, err := agent.DecodeToolResult(r.Result)
			if err != nil || res.Content != "agentrun-e2e" || res.Settled == nil || !reflect.DeepEqual(*res.Settled, want) {
				t.Fatalf("create_entities' result %s (%v); want agentrun-e2e settled %s", r.Result, err, testenv.MustJSON(want))
			}
		}
	}
}
