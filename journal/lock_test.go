package journal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
)

// TestRunIsBusyWhileDriven: while one FileStore (standing for another
// process: its own open file, its own flock) holds a run's lock, Run on
// another store of the same folder is a *BusyError naming the holder's pid
// and writes nothing; once released, the run goes on.
func TestRunIsBusyWhileDriven(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := filepath.Dir(f.tickets)
	other, err := journal.NewFileStore(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	f.run(t, "busy") // awaiting approval: 4 records
	n := len(f.records(t, "busy"))
	// Run released its lock, but a process this test binary forks at that
	// moment (other tests start programs) shares the lock's open file until
	// its exec closes it: wait out that window.
	var release func()
	for deadline := time.Now().Add(2 * time.Second); ; {
		release, err = other.LockRun(t.Context(), "busy")
		if err == nil || !errors.Is(err, journal.ErrBusy) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"busy", "busy"} { // twice: a refused driver leaves the lock as it was
		_, err = f.j.Run(t.Context(), id, agent.UserMessages(prompt), f.exec)
		var be *journal.BusyError
		if !errors.As(err, &be) || !errors.Is(err, journal.ErrBusy) || be.PID != os.Getpid() || be.RunID != "busy" {
			t.Fatalf("Run while locked: %v, want a *BusyError with pid %d", err, os.Getpid())
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "process "+strconv.Itoa(os.Getpid())) {
			t.Fatalf("busy error %q: want one line naming the pid", msg)
		}
	}
	if got := len(f.records(t, "busy")); got != n {
		t.Fatalf("records: %d after a refused Run, want %d", got, n)
	}
	if _, err := f.j.Run(t.Context(), "new", agent.UserMessages(prompt), f.exec); err != nil {
		t.Fatalf("another run is not busy: %v", err)
	}
	release()
	f.signal(t, "busy", journal.Signal{Name: journal.SignalApprove, Marker: ticketStep})
	if o := f.run(t, "busy"); o.Status != agent.StatusCompleted {
		t.Fatalf("after release: %+v, want Completed", o)
	}
	ids, err := f.j.Store.(*journal.FileStore).List()
	if err != nil || strings.Join(ids, ",") != "busy,new" {
		t.Fatalf("List = %v, %v; want the runs only, not their lock files", ids, err)
	}
}
