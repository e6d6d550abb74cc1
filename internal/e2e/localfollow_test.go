package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
)

// localBackend is where a local engine's test keeps its journal: a folder
// or a PostgreSQL database.
type localBackend struct {
	env     []string      // the programs' environment
	store   journal.Store // the same journal, as the test reads it
	tickets string
}

// eachLocalBackend runs test on a folder journal and on a PostgreSQL one,
// in parallel subtests; extra are more environment variables.
func eachLocalBackend(t *testing.T, test func(t *testing.T, b localBackend), extra ...string) {
	for _, name := range []string{"folder", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			b := localBackend{tickets: filepath.Join(dir, "tickets.jsonl")}
			where := filepath.Join(dir, "journal")
			// The programs seal their records under the suite's keys (make
			// test-encrypted): the test's store reads them with the same.
			var sealer journal.Sealer
			if cdc, err := testenv.SuiteCodec(); err != nil {
				t.Fatal(err)
			} else if cdc != nil {
				sealer = cdc
			}
			if name == "postgres" {
				where = pgtest.URL(t)
				db, err := postgres.Open(t.Context(), where)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(db.Close)
				b.store = db.SealedJournal(sealer)
			} else {
				s, err := journal.NewSealedFileStore(where, sealer)
				if err != nil {
					t.Fatal(err)
				}
				b.store = s
			}
			b.env = append(append(os.Environ(), "AGENTRUN_JOURNAL="+where, "AGENTRUN_TICKETS="+b.tickets, "AGENTRUN_MODEL=scripted"), extra...)
			test(t, b)
		})
	}
}

// records loads the run's journal.
func (b localBackend) records(t *testing.T, run string) []journal.Record {
	t.Helper()
	recs, err := b.store.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// count counts the run's records of type typ whose step begins with prefix.
func (b localBackend) count(t *testing.T, run string, typ journal.RecordType, prefix string) int {
	t.Helper()
	n := 0
	for _, r := range b.records(t, run) {
		if r.Type == typ && strings.HasPrefix(r.Step, prefix) {
			n++
		}
	}
	return n
}

// waitFree waits until no process holds the run's lock: a driver's flock
// goes with its process, a PostgreSQL lock a moment later, when the server
// ended the session of the driver's connection.
func (b localBackend) waitFree(t *testing.T, run string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "the ended driver's lock to go", func() bool {
		h, err := b.store.(journal.Holders).Holder(t.Context(), run)
		return err == nil && h == nil
	})
}

// completedAt is when the step's step.completed record was written.
func (b localBackend) completedAt(t *testing.T, run, step string) time.Time {
	t.Helper()
	for _, r := range b.records(t, run) {
		if r.Type == journal.StepCompleted && r.Step == step {
			return r.At
		}
	}
	t.Fatalf("run %s has no result of %s", run, step)
	return time.Time{}
}

// TestLocalFollowApproval: the hand example driven by one starter --local
// --follow, on a folder journal and on PostgreSQL: it waits
// AwaitingApproval holding the run (a second starter is busy, exit 5, and
// told the first follows it), a reconcile --local approve from another
// process wakes it, and it completes without a second start. The ticket's
// step, the driver's next step after the approval, completes within
// journal.WakeBound of the approve command's return. 3 model calls, 1
// ticket.
func TestLocalFollowApproval(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	eachLocalBackend(t, func(t *testing.T, b localBackend) {
		const run = "follow-hand"
		p := testenv.Start(t, b.env, starter, "--local", "--follow", "--id", run, prompt)
		if err := p.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
			t.Fatal(err)
		}
		if !p.Logged("run "+run+": AwaitingApproval") || !p.Logged("approve: "+reconcile+" --local approve "+run+" "+ticketStep) {
			t.Fatalf("the following driver does not say what it waits for:\n%s", p.Output())
		}
		code, out := testenv.Run(t, b.env, time.Minute, starter, "--local", "--follow", "--id", run)
		if code != 5 || !strings.Contains(out, "follows it") {
			t.Fatalf("a second starter: exit %d, want 5 (busy) naming a follower\n%s", code, out)
		}
		code, out = testenv.Run(t, b.env, time.Minute, reconcile, "--local", "show", run)
		if code != 0 || !strings.Contains(out, "this driver follows the run") || strings.Contains(out, "then resume the run") {
			t.Fatalf("show of a followed run: exit %d, want it to say a driver follows it\n%s", code, out)
		}
		code, out = testenv.Run(t, b.env, time.Minute, reconcile, "--local", "approve", run, ticketStep)
		approved := time.Now()
		if code != 0 || !strings.Contains(out, "the driver that follows the run goes on by itself") {
			t.Fatalf("approve: exit %d, want 0 saying the follower goes on\n%s", code, out)
		}
		if code := p.Wait(t, time.Minute); code != 0 || !p.Logged("run "+run+": Completed") {
			t.Fatalf("the following driver: exit %d, want 0 and Completed\n%s", code, p.Output())
		}
		late := b.completedAt(t, run, ticketStep).Sub(approved)
		t.Logf("the ticket step completed %v after the approve command returned (bound %v)", late, journal.WakeBound)
		if late > journal.WakeBound {
			t.Fatalf("the driver's next step came %v after the approval; a wake-up is at most %v late", late, journal.WakeBound)
		}
		if n := b.count(t, run, journal.StepCompleted, "llm/"); n != 3 {
			t.Errorf("model calls: %d, want 3", n)
		}
		if n := testenv.TicketCount(t, b.tickets); n != 1 {
			t.Errorf("tickets: %d, want 1", n)
		}
	})
}

// TestLocalSessionAnswersTwo: starter --local --session waits Idle after
// its answer; reconcile --local message --wait, twice, prints the answer
// of the driver that follows the session (step numbering going on); a
// message --wait with no driver following is refused in one line and
// writes nothing; SIGTERM leaves the session Idle, exit 0. 3 model calls.
func TestLocalSessionAnswersTwo(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"answer 1: {{last_user_message}}"},{"text":"answer 2: {{last_user_message}}"},{"text":"answer 3: {{last_user_message}}"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	eachLocalBackend(t, func(t *testing.T, b localBackend) {
		const run = "local-session"
		p := testenv.Start(t, b.env, starter, "--local", "--session", "--id", run, "hello")
		// The follow line is the last the driver prints before it waits; the
		// answer, the state and the command come before it.
		if err := p.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
			t.Fatalf("%v\n%s", err, p.Output())
		}
		if !p.Logged("answer 1: hello") || !p.Logged("run "+run+": Idle") || !p.Logged("message "+run+" TEXT... --wait") {
			t.Fatalf("the session does not say it waits Idle for a message:\n%s", p.Output())
		}
		for i, msg := range []string{"also check the staging database", "and the replica"} {
			code, out := testenv.Run(t, b.env, time.Minute, reconcile, "--local", "message", run, msg, "--wait")
			want := "answer " + string(rune('2'+i)) + ": " + msg
			if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "run "+run+": Idle") {
				t.Fatalf("message --wait %d: exit %d, want 0 and %q\n%s", i+1, code, want, out)
			}
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.Wait(t, time.Minute); code != 0 || !p.Logged("stopped following") {
			t.Fatalf("the session's driver after SIGTERM: exit %d, want 0 (Idle)\n%s", code, p.Output())
		}
		b.waitFree(t, run)
		n := len(b.records(t, run))
		code, out := testenv.Run(t, b.env, time.Minute, reconcile, "--local", "message", run, "anyone?", "--wait")
		if line := strings.TrimSpace(out); code != 2 || !strings.Contains(line, "no driver follows run "+run) || strings.Contains(line, "\n") {
			t.Fatalf("message --wait with no driver: exit %d, want 2 and one line\n%s", code, out)
		}
		if got := len(b.records(t, run)); got != n {
			t.Fatalf("the refused message wrote %d records", got-n)
		}
		if n := b.count(t, run, journal.StepCompleted, "llm/"); n != 3 {
			t.Errorf("model calls: %d, want 3", n)
		}
	}, "AGENTRUN_MODEL=scripted:"+script)
}

// TestLocalFollowCancelInSlowRead: a reconcile --local cancel reaches a
// following driver inside a slow read (lookup, held for a minute): the
// driver ends Cancelled (exit 6) within journal.WakeBound of the cancel,
// and nothing runs after it.
func TestLocalFollowCancelInSlowRead(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	eachLocalBackend(t, func(t *testing.T, b localBackend) {
		const run = "follow-cancel"
		p := testenv.Start(t, b.env, starter, "--local", "--follow", "--id", run, prompt)
		testenv.WaitFor(t, time.Minute, "llm/1 to complete (lookup runs next)", func() bool {
			return b.count(t, run, journal.StepCompleted, "llm/1") == 1
		})
		time.Sleep(200 * time.Millisecond) // into the read
		code, out := testenv.Run(t, b.env, time.Minute, reconcile, "--local", "cancel", run)
		cancelled := time.Now()
		if code != 0 {
			t.Fatalf("cancel: exit %d\n%s", code, out)
		}
		code = p.Wait(t, time.Minute)
		took := time.Since(cancelled)
		t.Logf("the driver ended %v after the cancel returned (bound %v)", took, journal.WakeBound)
		if code != 6 || !p.Logged("run "+run+": Cancelled") {
			t.Fatalf("the following driver: exit %d, want 6 (Cancelled)\n%s", code, p.Output())
		}
		if took > journal.WakeBound {
			t.Fatalf("the cancel reached the driver after %v; a wake-up is at most %v late", took, journal.WakeBound)
		}
		if n := b.count(t, run, journal.StepCompleted, ""); n != 1 {
			t.Errorf("results: %d, want 1 (llm/1; the read was cut short)", n)
		}
	}, "AGENTRUN_DEMO_DELAY=1m")
}

// TestLocalFollowKilledResumes: a following driver stopped by SIGTERM
// while it waits AwaitingApproval exits 3 and writes nothing; one
// SIGKILLed there leaves the run as it was and its lock free: a new
// starter --local --follow (no prompt) resumes it, waits in turn, and
// completes it once approved. 3 model calls, 1 ticket.
func TestLocalFollowKilledResumes(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	eachLocalBackend(t, func(t *testing.T, b localBackend) {
		const run = "follow-killed"
		p0 := testenv.Start(t, b.env, starter, "--local", "--follow", "--id", run, prompt)
		if err := p0.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
			t.Fatal(err)
		}
		n := len(b.records(t, run))
		if err := p0.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p0.Wait(t, time.Minute); code != 3 || !p0.Logged("stopped following") {
			t.Fatalf("a follower stopped by SIGTERM: exit %d, want 3 (AwaitingApproval)\n%s", code, p0.Output())
		}
		if got := len(b.records(t, run)); got != n {
			t.Fatalf("stopping the follower wrote %d records", got-n)
		}
		b.waitFree(t, run)
		p := testenv.Start(t, b.env, starter, "--local", "--follow", "--id", run)
		if err := p.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
			t.Fatal(err)
		}
		p.Kill(t)
		b.waitFree(t, run)
		p2 := testenv.Start(t, b.env, starter, "--local", "--follow", "--id", run)
		if err := p2.WaitLogged(t.Context(), "this driver follows the run", time.Minute); err != nil {
			t.Fatal(err) // busy, had the killed driver kept the run's lock
		}
		if code, out := testenv.Run(t, b.env, time.Minute, reconcile, "--local", "approve", run, ticketStep); code != 0 {
			t.Fatalf("approve: exit %d\n%s", code, out)
		}
		if code := p2.Wait(t, time.Minute); code != 0 || !p2.Logged("run "+run+": Completed") {
			t.Fatalf("the second starter --follow: exit %d, want 0 and Completed\n%s", code, p2.Output())
		}
		if n := b.count(t, run, journal.StepCompleted, "llm/"); n != 3 {
			t.Errorf("model calls: %d, want 3", n)
		}
		if n := testenv.TicketCount(t, b.tickets); n != 1 {
			t.Errorf("tickets: %d, want 1", n)
		}
	})
}
