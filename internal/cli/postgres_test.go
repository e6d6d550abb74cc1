package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/ratelimit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// TestLocalEngineOnPostgres: with AGENTRUN_JOURNAL a PostgreSQL URL, the
// local engine keeps its journal and its content store in the database
// and writes no folder; reconcile reads both back.
func TestLocalEngineOnPostgres(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dbURL := pgtest.URL(t)
	dir := t.TempDir()
	topic := strings.Repeat("very long topic ", 100) // 1,600 bytes: kept by reference
	script := `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"` + topic + `"}}]},{"text":"Looked up: {{last_tool_result}}"}]}`
	scriptFile := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+dbURL, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted:"+scriptFile)
	cmd := func(prog string, args ...string) (int, string) {
		t.Helper()
		return testenv.Run(t, env, time.Minute, prog, args...)
	}
	if code, out := cmd(starter, "--local", "--id", "r1", "look it up"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if code, out := cmd(reconcile, "--local", "show", "r1", "--step", hand.LookupStep); code != 0 || !strings.Contains(out, "output:\nNo policy found for "+topic) {
		t.Fatalf("show --step tool/1/0/lookup: exit %d\n%s", code, out)
	}
	var records, blobs int
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM agentrun_journal WHERE journal = 'local' AND run_id = 'r1'),
		(SELECT count(*) FROM agentrun_content)`).Scan(&records, &blobs); err != nil {
		t.Fatal(err)
	}
	if records < 4 || blobs == 0 {
		t.Fatalf("database holds %d records of r1 and %d blobs; want the run's journal and its large values", records, blobs)
	}
	for _, name := range []string{"postgres:", "postgresql:"} { // the URL taken for a folder
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Fatalf("a folder %s was created: %v", name, err)
		}
	}
}

// TestPostgresSettingErrors: an unreachable or refused database is one
// line naming AGENTRUN_JOURNAL and the target, without the password.
func TestPostgresSettingErrors(t *testing.T) {
	t.Parallel()
	starter := testenv.Program(t, "starter")
	good, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "Secret-Pa55"
	wrong := *good
	wrong.User = url.UserPassword(good.User.Username(), secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
	l.Close()
	unreachable := wrong
	unreachable.Host = closed
	dir := t.TempDir()
	for _, c := range []struct{ url, want string }{
		{wrong.String(), "password authentication failed"},
		{unreachable.String(), closed},
		{"postgresql://u:" + secret + "@localhost/db?sslmode=bogus", "invalid URL"},
	} {
		env := append(os.Environ(), "AGENTRUN_JOURNAL="+c.url, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted")
		code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", "hello")
		line := strings.TrimSpace(out)
		if code != 1 || strings.Contains(line, "\n") || strings.Contains(line, secret) || !strings.Contains(line, "AGENTRUN_JOURNAL") || !strings.Contains(line, c.want) {
			t.Errorf("AGENTRUN_JOURNAL=%s: exit %d, output %q; want exit 1 and one line with %q, without the password", postgres.Redact(c.url), code, out, c.want)
		}
	}
}

// TestSettingsStoresOnPostgres: the guard's journal and the local journal
// are apart in one database, and the content store is there too.
func TestSettingsStoresOnPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	s := postgresSettings(t, dbURL)
	guard, at, err := s.GuardStore(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(at, mustPassword(t, dbURL)) {
		t.Fatalf("guard location %q holds the password", at)
	}
	local, err := s.JournalStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.Append("run-1", 0, journal.Record{Type: journal.StepStarted, Step: "tool/1/0/x"}); err != nil {
		t.Fatal(err)
	}
	if recs, err := local.Load("run-1"); err != nil || len(recs) != 0 {
		t.Fatalf("local journal: %d records, %v; want none (the guard's are apart)", len(recs), err)
	}
	store, err := s.Content()
	if err != nil {
		t.Fatal(err)
	}
	key, err := store.Put(t.Context(), []byte("blob"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := store.Get(t.Context(), key); err != nil || string(got) != "blob" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}

func mustPassword(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.User.Password()
	if p == "" {
		return "\x00no password\x00"
	}
	return p
}

// TestLimitStoreOnPostgres: with AGENTRUN_JOURNAL a PostgreSQL URL, the
// rate limits' store is the database's agentrun_limits table, which a
// second Settings on the URL (another worker's) shares, and no limits
// folder is made.
func TestLimitStoreOnPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	s := postgresSettings(t, dbURL)
	store, err := s.LimitStore(t.Context())
	if err != nil {
		t.Fatalf("LimitStore: %v", err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := store.Update(t.Context(), "openai", func(st *ratelimit.State) error { st.Paused = at; return nil }); err != nil {
		t.Fatal(err)
	}
	other, err := postgresSettings(t, dbURL).LimitStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var paused time.Time
	if err := other.Update(t.Context(), "openai", func(st *ratelimit.State) error { paused = st.Paused; return nil }); err != nil {
		t.Fatal(err)
	}
	if !paused.Equal(at) {
		t.Fatalf("the second store's openai pause: %v; want %v", paused, at)
	}
	var rows int
	var state string
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(state::text) FROM agentrun_limits WHERE pool = 'openai'`).Scan(&rows, &state); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || state != `{"paused": "2030-01-02T03:04:05Z"}` {
		t.Fatalf("agentrun_limits: %d rows of openai, state %s; want 1 row pausing until 2030-01-02T03:04:05Z", rows, state)
	}
	if _, err := os.Stat(cli.LimitDir(s)); !os.IsNotExist(err) {
		t.Fatalf("a limits folder %s was made: %v", cli.LimitDir(s), err)
	}
}

// TestLocalRunLimitsOnPostgres: a local run whose model declares limits
// on a PostgreSQL journal reserves its calls' slots in the database: one
// agentrun_limits row for the pool, its next request a gap past the last
// call.
func TestLocalRunLimitsOnPostgres(t *testing.T) {
	t.Parallel()
	starter := testenv.Program(t, "starter")
	dbURL := pgtest.URL(t)
	dir := t.TempDir()
	scriptFile := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptFile, []byte(`{"turns":[{"text":"done"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	model := "scripted:" + scriptFile
	modelsFile := filepath.Join(dir, "models.json")
	if err := os.WriteFile(modelsFile, []byte(testenv.MustJSON(map[string]any{model: map[string]any{"limits": map[string]any{"requests_per_minute": 6, "pool": "acct"}}})), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+dbURL, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODEL="+model, "AGENTRUN_MODELS="+modelsFile)
	before := time.Now()
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", "say done"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	after := time.Now()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	var raw []byte
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(state::text) FROM agentrun_limits WHERE pool = 'acct'`).Scan(&rows, &raw); err != nil {
		t.Fatal(err)
	}
	var st ratelimit.State
	if err := json.Unmarshal(raw, &st); rows != 1 || err != nil {
		t.Fatalf("agentrun_limits: %d rows of acct, state %s (%v); want 1 row", rows, raw, err)
	}
	// 6 a minute at 97.5 %: the next request goes 10.26 s after the call's slot.
	gap := time.Minute * 40 / 39 / 6
	if st.Request.Before(before.Add(gap)) || st.Request.After(after.Add(gap)) {
		t.Fatalf("acct's next request at %v; want %v after the call, between %v and %v", st.Request, gap, before.Add(gap), after.Add(gap))
	}
}

// postgresSettings are the settings of a process whose AGENTRUN_JOURNAL is
// dbURL, and nothing else set.
func postgresSettings(t *testing.T, dbURL string) cli.Settings {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == "AGENTRUN_JOURNAL" {
			return dbURL
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return cli.Settings{Config: cfg}
}
