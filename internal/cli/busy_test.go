package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/tools"
)

const (
	prompt     = hand.Prompt
	ticketStep = hand.TicketStep
)

// TestTwoLocalDriversOneRun: two starter --local processes resume one run
// at once, the first held inside create_ticket (AGENTRUN_DEMO_DELAY). The
// second exits 5 (busy) with one line naming the first one's pid and
// writes nothing; the first completes with one ticket. On a folder (flock
// beside the journal) and on PostgreSQL (a session advisory lock).
func TestTwoLocalDriversOneRun(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"folder", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
			dir := t.TempDir()
			tickets := filepath.Join(dir, "tickets.jsonl")
			where := filepath.Join(dir, "journal")
			var store journal.Store
			if backend == "postgres" {
				where = pgtest.URL(t)
				db, err := postgres.Open(t.Context(), where)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(db.Close)
				store = db.Journal()
			}
			env := append(os.Environ(), "AGENTRUN_JOURNAL="+where, "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted")
			const run = "two-drivers"
			if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, prompt); code != 3 {
				t.Fatalf("first run: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
			}
			if code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", run, ticketStep); code != 0 {
				t.Fatalf("approve: exit %d\n%s", code, out)
			}
			if store == nil {
				fs, err := journal.NewFileStore(where)
				if err != nil {
					t.Fatal(err)
				}
				store = fs
			}
			records := runRecords(t, store, run)
			inTicket := startedTicket(records)

			first := testenv.Start(t, append(env, "AGENTRUN_DEMO_DELAY=4s"), starter, "--local", "--id", run)
			testenv.WaitFor(t, 30*time.Second, "the first driver to start create_ticket", inTicket)
			n := len(records())
			code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run)
			pid := strconv.Itoa(first.Cmd.Process.Pid)
			if line := strings.TrimSpace(out); code != 5 || strings.Contains(line, "\n") || !strings.Contains(line, "run two-drivers is busy: process "+pid) ||
				!strings.Contains(line, "nothing was written") {
				t.Fatalf("second driver: exit %d, output %q; want exit 5 and one line naming pid %s", code, out, pid)
			}
			if !first.Running() {
				t.Fatalf("the first driver ended before the second was refused; the test proves nothing:\n%s", first.Output())
			}
			if got := len(records()); got != n {
				t.Fatalf("records: %d after the refused driver, want %d", got, n)
			}
			if code := first.Wait(t, time.Minute); code != 0 || !strings.Contains(first.Output(), "TICKET-1") {
				t.Fatalf("first driver: exit %d\n%s", code, first.Output())
			}
			ts, err := tools.ReadTickets(tickets)
			if err != nil || len(ts) != 1 {
				t.Fatalf("tickets: %v, %v; want exactly 1", ts, err)
			}
			// Free again: a third driver finds the run completed.
			if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run); code != 0 || !strings.Contains(out, "Completed") {
				t.Fatalf("after the first driver: exit %d\n%s", code, out)
			}
		})
	}
}

// runRecords returns a function that loads run's records from store.
func runRecords(t *testing.T, store journal.Store, run string) func() []journal.Record {
	return func() []journal.Record {
		recs, err := store.Load(run)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
}

// startedTicket returns a function that reports whether run's journal in
// store holds the start of the hand example's create_ticket.
func startedTicket(records func() []journal.Record) func() bool {
	return func() bool {
		for _, r := range records() {
			if r.Type == journal.StepStarted && r.Step == ticketStep {
				return true
			}
		}
		return false
	}
}
