package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/ratelimit"
	"github.com/agentrun/agentrun/ratelimit/storetest"
)

// TestLimitsConformance runs the suite with the updaters taking turns
// between two pools (two DBs) on one database, as two processes would.
func TestLimitsConformance(t *testing.T) {
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) func() ratelimit.Store {
		a, b, _ := openTwo(t)
		stores := []ratelimit.Store{a.Limits(), b.Limits()}
		n := 0
		return func() ratelimit.Store {
			n++
			return stores[n%2]
		}
	})
}

// TestLimitsRowPerPool: each pool is one row holding its state as JSON.
func TestLimitsRowPerPool(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, pool := range []string{"openai", "anthropic", "openai"} {
		if err := db.Limits().Update(t.Context(), pool, func(s *ratelimit.State) error {
			s.Request = at
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	var state string
	query(t, u, `SELECT count(*), max(state::text) FILTER (WHERE pool = 'openai') FROM agentrun_limits`, &rows, &state)
	if rows != 2 || state != `{"request": "2030-01-02T03:04:05Z"}` {
		t.Fatalf("agentrun_limits: %d rows, openai's state %s; want 2 rows and {\"request\": \"2030-01-02T03:04:05Z\"}", rows, state)
	}
	if err := db.Limits().Update(t.Context(), "Open AI", func(*ratelimit.State) error { return nil }); err == nil || !strings.Contains(err.Error(), `pool "Open AI": want lowercase letters`) {
		t.Fatalf("Update of pool \"Open AI\" returned %v; want the pool's format", err)
	}
}

// TestLimitsFrozenHolder: a transaction that holds a pool's row and never
// ends (a frozen process) makes the others give up after the lock
// timeout, with one line naming the pool and the wait, and keeps nothing
// of theirs; other pools go on.
func TestLimitsFrozenHolder(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	if err := db.Limits().Update(t.Context(), "openai", func(s *ratelimit.State) error {
		s.Request = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM agentrun_limits WHERE pool = 'openai' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	called := false
	start := time.Now()
	err = db.Limits().Update(t.Context(), "openai", func(*ratelimit.State) error { called = true; return nil })
	took := time.Since(start)
	if err == nil {
		t.Fatal("Update of a pool whose row another transaction holds succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "rate limit openai: another caller held the pool's row for over 5s (lock_timeout)") || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line naming the pool and the 5 s wait", msg)
	}
	if took < 5*time.Second || took > 15*time.Second || called {
		t.Fatalf("Update gave up after %v, fn called %v; want after 5 s, fn uncalled", took, called)
	}
	if err := db.Limits().Update(t.Context(), "anthropic", func(*ratelimit.State) error { return nil }); err != nil {
		t.Fatalf("another pool while openai is held: %v", err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	var request time.Time
	if err := db.Limits().Update(t.Context(), "openai", func(s *ratelimit.State) error { request = s.Request; return nil }); err != nil {
		t.Fatalf("Update once the holder is gone: %v", err)
	}
	if !request.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("openai's Request = %v; want 2030-01-01", request)
	}
}

// TestMigrateFromVersion1: a database of schema version 1 (journals and
// content) gains the limits table and keeps its records.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	if err := db.Journal().Append("r1", 0, journal.Record{Type: journal.RunStarted}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	exec(t, u, `DROP TABLE agentrun_limits; UPDATE agentrun_schema SET version = 1`)
	db, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open of a version 1 database: %v", err)
	}
	defer db.Close()
	var version, records int
	query(t, u, `SELECT (SELECT version FROM agentrun_schema), (SELECT count(*) FROM agentrun_journal)`, &version, &records)
	if version != 2 || records != 1 {
		t.Fatalf("after Open: schema version %d, %d records; want version 2 and 1 record", version, records)
	}
	if err := db.Limits().Update(t.Context(), "openai", func(*ratelimit.State) error { return nil }); err != nil {
		t.Fatalf("Update after the migration: %v", err)
	}
}
