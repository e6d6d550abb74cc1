package pgtest_test

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func TestURLGivesFreshDatabases(t *testing.T) {
	t.Parallel()
	a, b := pgtest.URL(t), pgtest.URL(t)
	if a == b {
		t.Fatalf("two calls returned the same database")
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(t.Context(), u)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a fresh database has %d tables", n)
		}
		var fsync string
		if err := conn.QueryRow(t.Context(), `SHOW fsync`).Scan(&fsync); err != nil {
			t.Fatal(err)
		}
		if fsync != "on" {
			t.Errorf("fsync = %s, want on", fsync)
		}
		conn.Close(t.Context())
	}
}

// With AGENTRUN_TEST_POSTGRES_URL set, URL creates its databases on that
// server.
func TestURLFromEnvironment(t *testing.T) {
	first, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	server := *first
	server.Path = "/postgres"
	t.Setenv(pgtest.EnvURL, server.String())
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != first.Host || u.Path == first.Path || u.Path == "/postgres" {
		t.Fatalf("URL with %s set gave database %s on %s; want a new database on %s", pgtest.EnvURL, u.Path, u.Host, first.Host)
	}
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	conn.Close(t.Context())
}

// Restart stops the private cluster and starts it again with the same port
// and data: connections fail while it is down, and what was committed
// before is there afterwards.
func TestRestart(t *testing.T) {
	u := pgtest.URL(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE TABLE kept (n integer); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	ran := false
	pgtest.Restart(t, func() {
		ran = true
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, u); err == nil {
			c.Close(ctx)
			t.Error("connected while the server was stopped")
		}
	})
	if !ran {
		t.Fatal("Restart did not call down")
	}
	if err := conn.Ping(t.Context()); err == nil {
		t.Error("a connection from before the restart still works")
	}
	again, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatalf("connect after the restart: %v", err)
	}
	defer again.Close(context.Background())
	var n int
	if err := again.QueryRow(t.Context(), `SELECT n FROM kept`).Scan(&n); err != nil || n != 7 {
		t.Fatalf("after the restart: n = %d, %v; want 7", n, err)
	}
}
