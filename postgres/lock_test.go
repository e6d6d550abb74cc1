package postgres_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/journal/storetest"
)

// TestLockRunOneDriver: a run's driver lock, taken through one pool (one
// process), is refused through another with the holder's pid and host;
// other runs and the guard's journal are apart; a released lock is free.
func TestLockRunOneDriver(t *testing.T) {
	t.Parallel()
	a, b, _ := openTwo(t)
	lock := func(s journal.Store, run string) (journal.Lock, error) {
		return s.(journal.Locker).LockRun(t.Context(), run)
	}
	held, err := lock(a.Journal(), "run-1")
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
		r.Release()
	}
	held.Release()
	r, err := lock(b.Journal(), "run-1")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	r.Release()
}

// TestLockHeldEndsWithConnection: a driver lock's Held is nil while its
// session holds the advisory lock, and an error naming the ended
// connection once the server terminated that session (found by its
// application_name) with pg_terminate_backend; by then a second driver
// can take the lock. A released lock is not held either.
func TestLockHeldEndsWithConnection(t *testing.T) {
	t.Parallel()
	a, b, u := openTwo(t)
	lock, err := a.Journal().(journal.Locker).LockRun(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	for i := range 3 {
		if err := lock.Held(t.Context()); err != nil {
			t.Fatalf("Held #%d: %v, want nil while the session holds the lock", i+1, err)
		}
	}
	admin, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var killed int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE $1) t`, "agentrun driver pid "+strconv.Itoa(os.Getpid())+" on %").Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d lock connections, want 1", killed)
	}
	err = lock.Held(t.Context())
	if err == nil || !strings.Contains(err.Error(), "its PostgreSQL connection ended") {
		t.Fatalf("Held after pg_terminate_backend: %v, want an error saying the connection ended", err)
	}
	t.Logf("Held after pg_terminate_backend: %v", err)
	second, err := b.Journal().(journal.Locker).LockRun(t.Context(), "run-1")
	if err != nil {
		t.Fatalf("a second driver after the first lost its lock: %v, want the lock", err)
	}
	second.Release()
	lock.Release()
	lock.Release()
	if err := lock.Held(t.Context()); err == nil {
		t.Fatal("Held after Release: nil, want an error")
	}
}

// TestJournalWatch: a PostgreSQL journal's watch (LISTEN on a connection
// of its own) wakes on another pool's append to the run (NOTIFY in the
// append's statement), and only then.
func TestJournalWatch(t *testing.T) {
	t.Parallel()
	storetest.RunWatch(t, func(t *testing.T) (journal.Store, journal.Store) {
		a, b, _ := openTwo(t)
		return a.Journal(), b.Journal()
	})
}

// TestHolderSaysWhoFollows: Holder names the process whose session holds
// a run's lock, without taking it, says whether it follows the run once
// the lock is marked (the connection's application_name), and says none
// once the lock is released.
func TestHolderSaysWhoFollows(t *testing.T) {
	t.Parallel()
	a, b, _ := openTwo(t)
	h := b.Journal().(journal.Holders)
	if got, err := h.Holder(t.Context(), "run-1"); err != nil || got != nil {
		t.Fatalf("Holder of a free run: %+v, %v", got, err)
	}
	lock, err := a.Journal().(journal.Locker).LockRun(t.Context(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Holder(t.Context(), "run-1"); err != nil || got == nil || got.PID != os.Getpid() || got.Follows {
		t.Fatalf("Holder of a driven run: %+v, %v; want this pid, not following", got, err)
	}
	lock.(journal.FollowMarker).MarkFollowing()
	if got, err := h.Holder(t.Context(), "run-1"); err != nil || got == nil || got.PID != os.Getpid() || !got.Follows {
		t.Fatalf("Holder of a followed run: %+v, %v; want this pid, following", got, err)
	}
	if _, err := b.Journal().(journal.Locker).LockRun(t.Context(), "run-1"); !errors.Is(err, journal.ErrBusy) || !strings.Contains(err.Error(), "follows it") {
		t.Fatalf("a second driver: %v, want busy, naming a follower", err)
	}
	lock.Release()
	// The server ends the released lock's session a moment after the
	// connection closed.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := h.Holder(t.Context(), "run-1")
		if err == nil && got == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Holder 10s after release: %+v, %v; want none", got, err)
		}
	}
}
