package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	contentstoretest "github.com/agentrun/agentrun/content/storetest"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/journal"
	journalstoretest "github.com/agentrun/agentrun/journal/storetest"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/postgres"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// open opens a fresh database for one test.
func open(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	u := pgtest.URL(t)
	db, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(db.Close)
	return db, u
}

// openTwo opens two pools on one fresh database, as two processes would,
// and returns them with the database's URL.
func openTwo(t *testing.T) (a, b *postgres.DB, u string) {
	t.Helper()
	a, u = open(t)
	b, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return a, b, u
}

func TestJournalConformance(t *testing.T) {
	t.Parallel()
	journalstoretest.Run(t, func(t *testing.T) journal.Store {
		db, _ := open(t)
		return db.Journal()
	})
}

func TestGuardConformance(t *testing.T) {
	t.Parallel()
	journalstoretest.Run(t, func(t *testing.T) journal.Store {
		db, _ := open(t)
		return db.Guard()
	})
}

func TestContentConformance(t *testing.T) {
	t.Parallel()
	contentstoretest.Run(t, func(t *testing.T) content.Store {
		db, _ := open(t)
		return db.Content()
	})
}

// Eight appenders that saw the same count race: exactly one wins, the
// others get ErrConflict and write nothing.
func TestConcurrentAppendsOneWins(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	s := db.Journal()
	if err := s.Append("run-1", 0, journal.Record{Type: journal.RunStarted, Input: agent.UserMessages("go")}); err != nil {
		t.Fatal(err)
	}
	const appenders = 8
	for round := range 5 {
		seen := 1 + round*2
		var wg sync.WaitGroup
		errs := make([]error, appenders)
		start := make(chan struct{})
		for i := range appenders {
			wg.Go(func() {
				<-start
				errs[i] = s.Append("run-1", seen,
					journal.Record{Type: journal.StepStarted, Step: fmt.Sprintf("w%d-a", i), Kind: agent.KindWrite},
					journal.Record{Type: journal.StepCompleted, Step: fmt.Sprintf("w%d-b", i), Kind: agent.KindWrite})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: appenders %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, journal.ErrConflict):
				t.Fatalf("round %d: appender %d: %v, want nil or ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no appender won: %v", round, errs)
		}
		recs, err := s.Load("run-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != seen+2 {
			t.Fatalf("round %d: %d records, want %d", round, len(recs), seen+2)
		}
		if want := fmt.Sprintf("w%d-a", winner); recs[seen].Step != want || recs[seen+1].Step != fmt.Sprintf("w%d-b", winner) {
			t.Fatalf("round %d: records %s, %s; want the winner's (%s)", round, recs[seen].Step, recs[seen+1].Step, want)
		}
	}
}

// Several processes opening a fresh database at once migrate it once, and
// every one of them works.
func TestRacingOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	const opens = 4
	dbs := make([]*postgres.DB, opens)
	errs := make([]error, opens)
	var wg sync.WaitGroup
	for i := range opens {
		wg.Go(func() { dbs[i], errs[i] = postgres.Open(t.Context(), u) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(dbs[i].Close)
	}
	for i, db := range dbs {
		run := fmt.Sprintf("run-%d", i)
		if err := db.Journal().Append(run, 0, journal.Record{Type: journal.RunStarted}); err != nil {
			t.Fatalf("db %d: Append: %v", i, err)
		}
		if _, err := db.Content().Put(t.Context(), []byte(run)); err != nil {
			t.Fatalf("db %d: Put: %v", i, err)
		}
	}
	ids, err := dbs[0].Journal().List()
	if err != nil || len(ids) != opens {
		t.Fatalf("List = %q, %v; want %d runs", ids, err, opens)
	}
	var rows, version int
	query(t, u, `SELECT count(*), max(version) FROM agentrun_schema`, &rows, &version)
	if rows != 1 || version != postgres.SchemaVersion {
		t.Fatalf("agentrun_schema: %d rows, version %d; want 1 row, version %d", rows, version, postgres.SchemaVersion)
	}
	// Opening a migrated database changes nothing.
	db, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open of a migrated database: %v", err)
	}
	db.Close()
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	db.Close()
	exec(t, u, `UPDATE agentrun_schema SET version = 99`)
	_, err := postgres.Open(t.Context(), u)
	if err == nil {
		t.Fatal("Open of a database with schema version 99 succeeded")
	}
	msg := err.Error()
	want := fmt.Sprintf("schema version 99 is newer than this agentrun knows (%d): upgrade agentrun", postgres.SchemaVersion)
	if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line saying %q", msg, want)
	}
}

// Errors of Open are one line, name the target and never hold the
// password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	good := pgtest.URL(t)
	u, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-Pa55word"
	wrongPassword := *u
	wrongPassword.User = url.UserPassword(u.User.Username(), secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	unreachable := wrongPassword
	unreachable.Host = fmt.Sprintf("127.0.0.1:%d", closedPort)
	for _, c := range []struct {
		name, url, want string
	}{
		{"wrong password", wrongPassword.String(), "password authentication failed"},
		{"unreachable port", unreachable.String(), fmt.Sprintf("127.0.0.1:%d", closedPort)},
		{"bad URL", "postgres://agentrun:" + secret + "@localhost:notaport/db", "invalid URL"},
		{"bad sslmode", "postgres://agentrun:" + secret + "@localhost/db?sslmode=bogus", "invalid URL"},
		{"password parameter", "postgres://localhost:1/db?password=" + secret + "&connect_timeout=1", "localhost:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, err := postgres.Open(t.Context(), c.url)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if strings.Contains(msg, secret) || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
				t.Fatalf("error %q: want one line saying %q, without the password", msg, c.want)
			}
			if redacted := postgres.Redact(c.url); strings.Contains(redacted, secret) {
				t.Fatalf("Redact = %q holds the password", redacted)
			}
		})
	}
}

// A record is stored as the file store's JSON, byte for byte, and loads
// back equal.
func TestRecordsRoundTripByteExact(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	recs := []journal.Record{
		{Type: journal.RunStarted, Input: agent.UserMessages("héllo <b>&</b> \u2028 \x01 \"quoted\"\n")},
		{Type: journal.StepCompleted, Step: "tool/1/0/echo", Kind: agent.KindWrite, Idempotent: true,
			Result: []byte(`{"content":"TICKET-7","nested":{"a":[1,2.50,"\u00e9"]}}`)},
		{Type: journal.SignalRecord, Signal: &operator.Signal{Name: operator.SignalReconcile, Step: "tool/1/0/echo", Outcome: operator.OutcomeDone, Result: "x"}},
		{Type: journal.RunCompleted, Answer: strings.Repeat("long answer ", 10000)},
	}
	if err := db.Journal().Append("run-1", 0, recs...); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT record FROM agentrun_journal WHERE run_id = 'run-1' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(recs) {
		t.Fatalf("%d rows, want %d", len(stored), len(recs))
	}
	got, err := db.Journal().Load("run-1")
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		want, err := journal.EncodeJSON(rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(stored[i]) != string(want) {
			t.Errorf("record %d stored as %.80q, want %.80q", i, stored[i], want)
		}
		again, _ := journal.EncodeJSON(got[i])
		if string(again) != string(want) {
			t.Errorf("record %d loaded as %.80q, want %.80q", i, again, want)
		}
	}
}

// The local journal and the guard's journal are apart, like the folder and
// its "temporal" subfolder.
func TestJournalsApart(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	if err := db.Journal().Append("run-1", 0, journal.Record{Type: journal.RunStarted}); err != nil {
		t.Fatal(err)
	}
	if recs, err := db.Guard().Load("run-1"); err != nil || len(recs) != 0 {
		t.Fatalf("Guard().Load = %d records, %v; want none", len(recs), err)
	}
	if err := db.Guard().Append("run-1", 0, journal.Record{Type: journal.StepStarted, Step: "s", Kind: agent.KindWrite}); err != nil {
		t.Fatalf("Guard().Append: %v", err)
	}
}

// Damage from outside is reported, never returned; a Put repairs it. A gap
// or a bad record in a journal is ErrCorrupt.
func TestDamage(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	data := []byte("precious")
	key, err := db.Content().Put(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, u, `UPDATE agentrun_content SET data = 'tampered'`)
	if got, err := db.Content().Get(t.Context(), key); !errors.Is(err, content.ErrDamaged) {
		t.Fatalf("Get of a damaged blob = %q, %v; want ErrDamaged", got, err)
	}
	if _, err := db.Content().Put(t.Context(), data); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Content().Get(t.Context(), key); err != nil || string(got) != string(data) {
		t.Fatalf("Get after the repairing Put = %q, %v", got, err)
	}

	s := db.Journal()
	if err := s.Append("run-1", 0, journal.Record{Type: journal.RunStarted}, journal.Record{Type: journal.RunCompleted}, journal.Record{Type: journal.RunCompleted}); err != nil {
		t.Fatal(err)
	}
	exec(t, u, `UPDATE agentrun_journal SET record = 'not json' WHERE seq = 2`)
	if _, err := s.Load("run-1"); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Load of a bad record = %v, want ErrCorrupt", err)
	}
	exec(t, u, `DELETE FROM agentrun_journal WHERE seq = 1`)
	if _, err := s.Load("run-1"); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("Load of a journal with a gap = %v, want ErrCorrupt", err)
	}
}

func exec(t *testing.T, u, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func query(t *testing.T, u, sql string, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), sql, nil...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// An Append whose connection dies before it answers returns an error that
// is neither ErrConflict nor ErrInvalid: its outcome is unknown, never
// "absent". The store goes on working.
func TestAppendCutShortIsUnknown(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	s := db.Journal()
	if err := s.Append("run-1", 0, journal.Record{Type: journal.RunStarted}); err != nil {
		t.Fatal(err)
	}
	locker, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `LOCK TABLE agentrun_journal IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- s.Append("run-1", 1, journal.Record{Type: journal.StepStarted, Step: "tool/1/0/x", Kind: agent.KindWrite})
	}()
	// Wait (bounded) until the append waits for the lock, then end its
	// session from the server's side.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pid int
		err := tx.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO agentrun_journal%'`).Scan(&pid)
		if err == nil {
			if _, err := tx.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
				t.Fatal(err)
			}
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the append never waited for the lock")
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view; there is no signal to wait for
	}
	err = <-done
	if err == nil || errors.Is(err, journal.ErrConflict) || errors.Is(err, operator.ErrInvalid) {
		t.Fatalf("Append whose session was terminated = %v; want an error of unknown outcome", err)
	}
	t.Logf("error: %v", err)
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Load("run-1")
	if err != nil || len(recs) != 1 {
		t.Fatalf("Load after the terminated append = %d records, %v; want 1 (it never ran)", len(recs), err)
	}
	if err := s.Append("run-1", 1, journal.Record{Type: journal.RunCompleted}); err != nil {
		t.Fatalf("Append after the terminated one: %v", err)
	}
}
