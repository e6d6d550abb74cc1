package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
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
	var lock journal.Lock
	for deadline := time.Now().Add(2 * time.Second); ; {
		lock, err = other.LockRun(t.Context(), "busy")
		if err == nil || !errors.Is(err, journal.ErrBusy) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"busy", "busy"} { // twice: a refused driver leaves the lock as it was
		_, err = f.j.Drive(t.Context(), id, agent.UserMessages(prompt), f.exec)
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
	if _, err := f.j.Drive(t.Context(), "new", agent.UserMessages(prompt), f.exec); err != nil {
		t.Fatalf("another run is not busy: %v", err)
	}
	lock.Release()
	f.signal(t, "busy", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if o := f.run(t, "busy"); o.Status != agent.StatusCompleted {
		t.Fatalf("after release: %+v, want Completed", o)
	}
	ids, err := f.j.Store.(*journal.FileStore).List()
	if err != nil || strings.Join(ids, ",") != "busy,new" {
		t.Fatalf("List = %v, %v; want the runs only, not their lock files", ids, err)
	}
}

// TestFileLockHeld: a folder's driver lock is held from LockRun until
// Release (a flock lasts as long as its process), is refused to another
// store meanwhile, and says so once released; Release twice is harmless.
func TestFileLockHeld(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "journal")
	a, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := a.LockRun(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := lock.Held(t.Context()); err != nil {
			t.Fatalf("Held #%d: %v, want nil while the lock is taken", i+1, err)
		}
	}
	if _, err := b.LockRun(t.Context(), "held"); !errors.Is(err, journal.ErrBusy) {
		t.Fatalf("second LockRun while held: %v, want ErrBusy", err)
	}
	lock.Release()
	lock.Release()
	if err := lock.Held(t.Context()); err == nil {
		t.Fatal("Held after Release: nil, want an error")
	}
	other, err := b.LockRun(t.Context(), "held")
	if err != nil {
		t.Fatalf("LockRun after Release: %v", err)
	}
	other.Release()
}

// lostLockStore is a FileStore whose driver lock is lost after held
// Held calls, as a PostgreSQL lock is when its connection ends.
type lostLockStore struct {
	*journal.FileStore
	held  int
	calls int
}

var errConnGone = errors.New("its connection ended")

func (s *lostLockStore) LockRun(ctx context.Context, runID string) (journal.Lock, error) {
	l, err := s.FileStore.LockRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	return &losingLock{Lock: l, s: s}, nil
}

type losingLock struct {
	journal.Lock
	s *lostLockStore
}

func (l *losingLock) Held(ctx context.Context) error {
	l.s.calls++
	if l.s.calls > l.s.held {
		return errConnGone
	}
	return l.Lock.Held(ctx)
}

// TestRunStopsWhenLockLost: Run asks its lock before every step; once the
// lock is lost it returns a *LockLostError naming the step it did not run
// (one line, wrapping ErrLockLost and the lock's reason), and that step
// and no later one is in the journal. Run again, with the lock, resumes
// the run where it stopped and calls no step twice.
func TestRunStopsWhenLockLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		held int    // Held calls that find the lock
		step string // the step Run stops before
		recs int    // records when it stops
	}{
		{0, "llm/1", 1},         // run.started only
		{1, hand.LookupStep, 2}, // after the first model call
		{2, "llm/2", 3},         // after the lookup
	} {
		t.Run(c.step, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			s := &lostLockStore{FileStore: f.j.Store.(*journal.FileStore), held: c.held}
			f.j.Store = s
			_, err := f.j.Drive(t.Context(), "lost", agent.UserMessages(prompt), f.exec)
			var lost *journal.LockLostError
			if !errors.As(err, &lost) || !errors.Is(err, journal.ErrLockLost) || !errors.Is(err, errConnGone) || errors.Is(err, journal.ErrBusy) {
				t.Fatalf("Run: %v, want a *LockLostError wrapping ErrLockLost and the lock's reason", err)
			}
			want := "lost the driver lock of run lost (its connection ended): stopped before step " + c.step
			if lost.Step != c.step || lost.RunID != "lost" || err.Error() != want {
				t.Fatalf("Run: %q, want %q", err, want)
			}
			recs := f.records(t, "lost")
			if len(recs) != c.recs {
				t.Fatalf("records: %d after the lock was lost, want %d", len(recs), c.recs)
			}
			for _, r := range recs {
				if r.Step == c.step {
					t.Fatalf("step %s is in the journal (%s) though Run stopped before it", c.step, r.Type)
				}
			}
			if s.calls != c.held+1 {
				t.Fatalf("Held calls: %d, want %d (one per step started, one that found the lock lost)", s.calls, c.held+1)
			}
			s.held = 1 << 30
			if o := f.run(t, "lost"); o.Status != agent.StatusAwaitingApproval {
				t.Fatalf("resumed: %+v, want AwaitingApproval", o)
			}
			for name, n := range f.exec.calls {
				if n != 1 {
					t.Fatalf("step %s called %d times across both Runs, want 1", name, n)
				}
			}
		})
	}
}
