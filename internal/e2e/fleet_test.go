package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
)

// pgFleet is a fleet of workers on separate "hosts": every process (worker,
// starter, reconcile) runs in its own empty folder, which is also its HOME
// and TMPDIR, and the processes share nothing but the Temporal dev server
// and one PostgreSQL database (AGENTRUN_JOURNAL, from pgtest). The ticket
// file is the world the demo write acts on, outside every host.
type pgFleet struct {
	*fleet
	db      string
	hosts   []string
	workers []*testenv.Proc
}

func newPGFleet(t *testing.T, srv *testenv.Server) *pgFleet {
	return &pgFleet{fleet: newFleet(t, srv), db: pgtest.URL(t)}
}

// host returns a new empty folder for one process; files are copied into
// it by name (a script, say), as a deployment would ship them.
func (p *pgFleet) host(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.hosts = append(p.hosts, dir)
	return dir
}

func (p *pgFleet) hostEnv(host string, extra ...string) []string {
	return p.srv.Env(append([]string{
		"AGENTRUN_TASK_QUEUE=" + p.queue,
		"AGENTRUN_JOURNAL=" + p.db,
		"AGENTRUN_TICKETS=" + p.tickets,
		"AGENTRUN_MODEL=scripted",
		"HOME=" + host,
		"TMPDIR=" + host,
	}, extra...)...)
}

// start starts n workers, each on a new host.
func (p *pgFleet) start(t *testing.T, n int, files map[string]string, extra ...string) []*testenv.Proc {
	t.Helper()
	var procs []*testenv.Proc
	for range n {
		host := p.host(t, files)
		procs = append(procs, testenv.StartIn(t, host, p.hostEnv(host, extra...), testenv.Program(t, "worker")))
	}
	p.workers = append(p.workers, procs...)
	return procs
}

// run runs the starter or reconcile on a new host.
func (p *pgFleet) run(t *testing.T, prog string, args ...string) (int, string) {
	t.Helper()
	host := p.host(t, nil)
	return testenv.RunIn(t, host, p.hostEnv(host), time.Minute, testenv.Program(t, prog), args...)
}

// checkNoLocalState fails the test if any host holds a journal, guard or
// content store as files: the fleet's durable state must be in
// PostgreSQL. It also checks that the database holds content and, if the
// run wrote through the guard, the guard's records.
func (p *pgFleet) checkNoLocalState(t *testing.T, guarded bool) {
	t.Helper()
	for _, host := range p.hosts {
		err := filepath.WalkDir(host, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch name := d.Name(); {
			case name == "journal", name == "content", name == "temporal", name == ".agentrun", strings.HasSuffix(name, ".jsonl"):
				t.Errorf("host %s holds %s: durable state must be in PostgreSQL", host, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var guard, blobs int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM agentrun_journal WHERE journal = 'temporal'), (SELECT count(*) FROM agentrun_content)`).Scan(&guard, &blobs); err != nil {
		t.Fatal(err)
	}
	if blobs == 0 || (guard == 0) == guarded {
		t.Errorf("PostgreSQL holds %d guard records and %d blobs; want blobs, and guard records only after a write (%v)", guard, blobs, guarded)
	}
}

// answer waits for the run's result and returns its answer.
func answer(t *testing.T, srv *testenv.Server, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var a string
	if err := srv.Client.GetWorkflow(ctx, runID, "").Get(ctx, &struct {
		Answer *string `json:"answer"`
	}{&a}); err != nil {
		t.Fatalf("run result: %v", err)
	}
	return a
}

// TestFleetHandExampleOnPostgres: three workers on separate hosts sharing
// only PostgreSQL and Temporal run the hand example with its approval (given
// by the reconcile program on yet another host): 3 model calls, 1 ticket,
// and no host holds a journal or content folder.
func TestFleetHandExampleOnPostgres(t *testing.T) {
	t.Parallel()
	fleetHandExample(t, testenv.DevServer(t))
}

// fleetHandExample is TestFleetHandExampleOnPostgres on srv (the dev
// server, or a cluster: TestClusterFleetHandExample).
func fleetHandExample(t *testing.T, srv *testenv.Server) {
	f := newPGFleet(t, srv)
	f.start(t, 3, nil)
	const run = "e2e-fleet-hand"
	if code, out := f.run(t, "starter", "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if code, out := f.run(t, "reconcile", "approve", run, ticketStep); code != 0 {
		t.Fatalf("reconcile approve: exit %d\n%s", code, out)
	}
	code, out := f.run(t, "starter", "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	f.checkNoLocalState(t, true)
}

// TestFleetCrashInsideWriteOnPostgres: the whole fleet of three is
// SIGKILLed while one of its workers holds create_ticket after the ticket
// was written; a fresh fleet of three finds the write started and never
// recorded in PostgreSQL's guard journal, so the run becomes Indeterminate
// (found by its search attribute); `reconcile done` with the real ticket
// id (an update) completes it naming that ticket: 1 ticket, 3 model calls.
func TestFleetCrashInsideWriteOnPostgres(t *testing.T) {
	t.Parallel()
	fleetCrashInsideWrite(t, testenv.DevServer(t))
}

// fleetCrashInsideWrite is TestFleetCrashInsideWriteOnPostgres on srv (the
// dev server, or a cluster: TestClusterFleetCrashInsideWrite).
func fleetCrashInsideWrite(t *testing.T, srv *testenv.Server) {
	f := newPGFleet(t, srv)
	first := f.start(t, 3, nil, "AGENTRUN_TEST_HOLD_AFTER=create_ticket")
	const run = "e2e-fleet-crash"
	if code, out := f.run(t, "starter", "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if code, out := f.run(t, "reconcile", "approve", run, ticketStep); code != 0 {
		t.Fatalf("reconcile approve: exit %d\n%s", code, out)
	}
	testenv.WaitFor(t, time.Minute, "the ticket to exist and a worker to hold create_ticket", func() bool {
		if f.ticketCount(t) != 1 {
			return false
		}
		for _, w := range first {
			if strings.Contains(w.Output(), testenv.HoldLine(testenv.HoldAfter, "create_ticket")) {
				return true
			}
		}
		return false
	})
	for _, w := range first {
		w.Kill(t)
	}
	t.Log("SIGKILLed the whole fleet while it held create_ticket")

	f.start(t, 3, nil)
	st := waitStatus(t, srv, run, "Indeterminate", time.Minute)
	if st.Indeterminate != ticketStep {
		t.Fatalf("indeterminate step %q, want %s", st.Indeterminate, ticketStep)
	}
	f.waitListed(t, run, `AgentRunStatus="Indeterminate"`)
	ts, err := tools.ReadTickets(f.tickets)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tickets %v, %v; want exactly 1", ts, err)
	}
	if code, out := f.run(t, "reconcile", "done", run, ticketStep, ts[0].ID); code != 0 {
		t.Fatalf("reconcile done: exit %d\n%s", code, out)
	}
	if a := answer(t, srv, run); !strings.Contains(a, ts[0].ID) {
		t.Fatalf("answer %q does not name the reconciled %s", a, ts[0].ID)
	}
	waitStatus(t, srv, run, "Completed", 30*time.Second)
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	f.checkNoLocalState(t, true)
}

// TestFleetPostgresRestart: PostgreSQL is stopped in the middle of a run of
// several slow lookups and started again. While it is down, steps fail and
// Temporal retries them (an attempt above 1 in the history); the run then
// completes with one model step per turn and the same answer as without
// the restart. Not parallel: the restart takes down every database of this
// test process.
func TestFleetPostgresRestart(t *testing.T) {
	fleetPostgresRestart(t, testenv.DevServer(t))
}

// fleetPostgresRestart is TestFleetPostgresRestart on srv (the dev server,
// or a cluster: TestClusterFleetPostgresRestart).
func fleetPostgresRestart(t *testing.T, srv *testenv.Server) {
	const turns = 5 // four lookups, then the answer
	f := newPGFleet(t, srv)
	// Each call's arguments are over 1 KiB, so every model step stores
	// them in PostgreSQL: a step that needs the database falls in the
	// window whichever worker (warm cache or not) takes it.
	pad := strings.Repeat("x", 1200)
	script := `{"turns":[` +
		`{"tool_calls":[{"name":"lookup","args":{"topic":"vpn","note":"` + pad + `1"}}]},` +
		`{"tool_calls":[{"name":"lookup","args":{"topic":"laptop","note":"` + pad + `2"}}]},` +
		`{"tool_calls":[{"name":"lookup","args":{"topic":"database access","note":"` + pad + `3"}}]},` +
		`{"tool_calls":[{"name":"lookup","args":{"topic":"vpn","note":"` + pad + `4"}}]},` +
		`{"text":"Last lookup: {{last_tool_result}}"}]}`
	// Lookups of 4 s leave at least 12 s of run after the first one, for
	// PostgreSQL to go down in (it stopped too late on a loaded machine
	// when they took 1 s).
	f.start(t, 3, map[string]string{"script.json": script}, "AGENTRUN_MODEL=scripted:script.json", "AGENTRUN_DEMO_DELAY=4s")
	const run = "e2e-fleet-pg-restart"
	if code, out := f.run(t, "starter", "--id", run, "Check our policies."); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	// In the middle: the first lookup is done.
	testenv.WaitFor(t, time.Minute, run+" to finish its first lookup", func() bool {
		st, err := state(t, srv, run)
		return err == nil && st.StepCount >= 2
	})
	var failed string
	pgtest.Restart(t, func() {
		down := time.Now()
		// A step that needs PostgreSQL fails and is retried, and fails
		// again, three times: its pending activity shows attempt 4 (after
		// the retry policy's 1, 2 and 4 s intervals, so PostgreSQL stays
		// down for several seconds).
		testenv.WaitFor(t, time.Minute, "a step to fail three times while PostgreSQL is down", func() bool {
			desc, err := srv.Describe(t, run)
			if err != nil {
				return false
			}
			for _, a := range desc.GetPendingActivities() {
				if a.GetAttempt() > 3 {
					failed = fmt.Sprintf("%s attempt %d: %s", a.GetActivityId(), a.GetAttempt(), a.GetLastFailure().GetMessage())
					return true
				}
			}
			return false
		})
		t.Logf("PostgreSQL down for %v; %s", time.Since(down).Round(100*time.Millisecond), failed)
	})
	if a := answer(t, srv, run); !strings.Contains(a, "Last lookup: VPN policy") {
		t.Fatalf("answer %q, want the last lookup's VPN policy", a)
	}
	h := history(t, srv, run)
	models, lookups, retried := 0, 0, 0
	for id, n := range h.attempts {
		switch {
		case strings.HasPrefix(id, "llm/"):
			models++
		case strings.HasSuffix(id, "/lookup"):
			lookups++
		}
		if n > 1 {
			retried++
		}
	}
	t.Logf("attempts %v", h.attempts)
	if models != turns || lookups != turns-1 {
		t.Fatalf("model steps: %d, lookups: %d; want %d and %d (one model step per turn), as without the restart", models, lookups, turns, turns-1)
	}
	if retried == 0 {
		t.Fatalf("no activity was retried (attempts %v), want one that failed while PostgreSQL was down", h.attempts)
	}
	final, err := state(t, srv, run)
	if err != nil || string(final.Status) != "Completed" || final.StepCount != 2*turns-1 {
		t.Fatalf("final state %+v, %v; want Completed with %d steps", final, err, 2*turns-1)
	}
	f.checkNoLocalState(t, false)
}
