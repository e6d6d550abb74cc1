package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
)

// TestLocalDriverLosesPostgresLock: a starter --local on PostgreSQL drives
// an approved create_ticket, held inside it after its effect
// (AGENTRUN_DEMO_DELAY). Meanwhile the server ends the driver's lock
// connection (pg_terminate_backend on the backend whose application_name
// names the driver's pid), which drops its advisory lock. The driver
// finishes that step, then stops before the next one (llm/3): exit 5, one
// line naming the run, the step and the command that resumes it, and the
// journal holds nothing after the ticket's step.completed. Run again, the
// driver completes the run with the one ticket.
func TestLocalDriverLosesPostgresLock(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dbURL := pgtest.URL(t)
	db, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	store := db.Journal()
	tickets := filepath.Join(t.TempDir(), "tickets.jsonl")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+dbURL, "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted")
	const run = "lost-lock"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, prompt); code != 3 {
		t.Fatalf("first run: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", run, ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	records := runRecords(t, store, run)
	inTicket := startedTicket(records)

	driver := testenv.Start(t, append(env, "AGENTRUN_DEMO_DELAY=4s"), starter, "--local", "--id", run)
	testenv.WaitFor(t, 30*time.Second, "the driver to start create_ticket", inTicket)
	admin, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	pid := strconv.Itoa(driver.Cmd.Process.Pid)
	var backends []int
	rows, err := admin.Query(t.Context(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE $1`,
		"agentrun driver pid "+pid+" on %")
	if err != nil {
		t.Fatal(err)
	}
	backends, err = pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(backends) != 1 {
		t.Fatalf("lock connections of driver %s: %v, %v; want exactly 1", pid, backends, err)
	}
	var terminated bool
	// The second argument waits (up to 10 s) until the backend is gone,
	// and with it the advisory lock.
	if err := admin.QueryRow(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, backends[0]).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", backends[0], terminated, err)
	}
	if !driver.Running() || len(testenv.Tickets(t, tickets)) != 1 {
		t.Fatalf("the driver left create_ticket before its lock connection ended; the test proves nothing:\n%s", driver.Output())
	}

	code := driver.Wait(t, time.Minute)
	out := strings.TrimSpace(driver.Output())
	want := "starter: lost the driver lock of run " + run + " (its PostgreSQL connection ended: "
	if code != 5 || strings.Contains(out, "\n") || !strings.HasPrefix(out, want) ||
		!strings.HasSuffix(out, "): stopped before step llm/3; run "+starter+" --local --id "+run+" to resume") {
		t.Fatalf("driver: exit %d, output %q; want exit 5 and one line %q...stopped before step llm/3; run ... to resume", code, out, want)
	}
	t.Logf("driver: exit %d: %s", code, out)
	recs := records()
	last := recs[len(recs)-1]
	if last.Type != journal.StepCompleted || last.Step != ticketStep {
		t.Fatalf("last record: %s %s, want the %s of %s: nothing after the lock was lost", last.Type, last.Step, journal.StepCompleted, ticketStep)
	}
	for _, r := range recs {
		if r.Step == "llm/3" {
			t.Fatalf("llm/3 is in the journal (%s) though the driver stopped before it", r.Type)
		}
	}

	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run); code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("resume: exit %d, want 0 (Completed with TICKET-1)\n%s", code, out)
	}
	if ts := testenv.Tickets(t, tickets); len(ts) != 1 {
		t.Fatalf("tickets: %d, want exactly 1", len(ts))
	}
}
