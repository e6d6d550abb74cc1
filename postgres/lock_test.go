package postgres_test

import (
	"errors"
	"os"
	"testing"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
)

// TestLockRunOneDriver: a run's driver lock, taken through one pool (one
// process), is refused through another with the holder's pid and host;
// other runs and the guard's journal are apart; a released lock is free.
func TestLockRunOneDriver(t *testing.T) {
	t.Parallel()
	a, u := open(t)
	b, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lock := func(s journal.Store, run string) (func(), error) {
		return s.(journal.Locker).LockRun(t.Context(), run)
	}
	release, err := lock(a.Journal(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = lock(b.Journal(), "run-1")
	host, _ := os.Hostname()
	var be *journal.BusyError
	if !errors.As(err, &be) || !errors.Is(err, journal.ErrBusy) || be.PID != os.Getpid() || be.Host != host {
		t.Fatalf("second lock: %v, want a *BusyError naming pid %d on %s", err, os.Getpid(), host)
	}
	for _, c := range []struct {
		s   journal.Store
		run string
	}{{b.Journal(), "run-2"}, {b.Guard(), "run-1"}} {
		r, err := lock(c.s, c.run)
		if err != nil {
			t.Fatalf("lock of another run or journal: %v", err)
		}
		r()
	}
	release()
	r, err := lock(b.Journal(), "run-1")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	r()
}
