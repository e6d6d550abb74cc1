package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// Keys of the sealed journal tests: k1, and k2 for a key that is not it.
var (
	sealKey1 = "k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))
	sealKey2 = "k2:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x01}, 32))
)

// handSecrets are texts of the hand example's prompt, tool call, tool
// result and answer.
var handSecrets = []string{"orders database", "data owner", "TICKET-1", "read access"}

// assertNoSecrets fails t if data holds a secret, plain or in base64.
func assertNoSecrets(t *testing.T, what string, data []byte, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("%s holds %q in plain text", what, form)
			}
		}
	}
}

// handRunSealed runs the hand example on the local engine with key k1,
// in journal (a folder or a PostgreSQL URL): it parks for approval, is
// approved, and completes with its ticket. It returns the environment.
func handRunSealed(t *testing.T, journal string, keys ...string) []string {
	t.Helper()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+journal, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted",
		"AGENTRUN_CODEC_KEYS="+strings.Join(keys, ","), "AGENTRUN_CODEC_KEY_FILE=")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", prompt); code != 3 {
		t.Fatalf("run: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", "r1", ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1"); code != 0 || !strings.Contains(out, "filed as TICKET-1") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	return env
}

// withKeys is env with AGENTRUN_CODEC_KEYS set to keys.
func withKeys(env []string, keys string) []string {
	return append(append([]string(nil), env...), "AGENTRUN_CODEC_KEYS="+keys)
}

// assertShowsSealed checks reconcile --local show of r1: with the key (and
// after a rotation) it shows the answer and the ticket step; without it,
// or with another key id, it prints one line naming the key it lacks on
// stderr, nothing on stdout, and exits 2.
func assertShowsSealed(t *testing.T, env []string) {
	t.Helper()
	reconcile := testenv.Program(t, "reconcile")
	for _, keys := range []string{sealKey1, sealKey2 + "," + sealKey1} {
		code, out := testenv.Run(t, withKeys(env, keys), time.Minute, reconcile, "--local", "show", "r1")
		if code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "filed as TICKET-1") {
			t.Fatalf("show with the key (%s): exit %d, want the answer:\n%s", keys[:2], code, out)
		}
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step", ticketStep)
	if code != 0 || !strings.Contains(out, "create_ticket(") || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("show --step with the key: exit %d, want the step's input and result:\n%s", code, out)
	}
	for _, c := range []struct{ keys, want string }{
		{"", "journal r1: record 1 is sealed under key k1, and no keys are configured (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE)"},
		{sealKey2, "journal r1: record 1 is sealed under key k1, which is not among AGENTRUN_CODEC_KEYS (have: k2)"},
	} {
		cmd := exec.CommandContext(t.Context(), reconcile, "--local", "show", "r1")
		cmd.Env = withKeys(env, c.keys)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if code != 2 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Fatalf("show with keys %.2q: exit %d (%v), stdout %q, stderr %q; want exit 2, nothing on stdout, one line saying %q", c.keys, code, err, stdout.String(), stderr.String(), c.want)
		}
	}
}

// TestLocalJournalSealed: with a payload key set, the local engine's
// journal file holds none of the prompt, the tool call, its result or the
// answer; reconcile --local show reads it with the key, and without it
// says which key it lacks (exit 2).
func TestLocalJournalSealed(t *testing.T) {
	t.Parallel()
	journal := filepath.Join(t.TempDir(), "journal")
	env := handRunSealed(t, journal, sealKey1)
	data, err := os.ReadFile(filepath.Join(journal, "r1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "the journal file", data, handSecrets...)
	if lines, sealed := bytes.Count(data, []byte("\n")), bytes.Count(data, []byte(`"sealed":{"key":"k1"`)); lines < 6 || sealed != lines {
		t.Fatalf("%d of %d records sealed under k1:\n%s", sealed, lines, data)
	}
	if !bytes.Contains(data, []byte(`"step":"`+ticketStep+`"`)) {
		t.Fatalf("the journal file does not name the step %s in plain:\n%s", ticketStep, data)
	}
	assertShowsSealed(t, env)
}

// TestLocalJournalSealedOnPostgres: the same with AGENTRUN_JOURNAL a
// PostgreSQL URL: the journal's rows hold none of the run's text.
func TestLocalJournalSealedOnPostgres(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	env := handRunSealed(t, dbURL, sealKey1)
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var data []byte
	var records int
	if err := conn.QueryRow(t.Context(), `SELECT string_agg(record, '\x0a'::bytea ORDER BY seq), count(*) FROM agentrun_journal
		WHERE journal = 'local' AND run_id = 'r1'`).Scan(&data, &records); err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "the journal's rows", data, handSecrets...)
	if sealed := bytes.Count(data, []byte(`"sealed":{"key":"k1"`)); records < 6 || sealed != records {
		t.Fatalf("%d of %d rows sealed under k1:\n%s", sealed, records, data)
	}
	assertShowsSealed(t, env)
}

// TestPlainLocalJournalWithKeys: a run begun without keys goes on with a
// key set: its plain records still read, the new ones are sealed, show
// reads the whole; without the key, show names the first sealed record.
func TestPlainLocalJournalWithKeys(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	journal := filepath.Join(dir, "journal")
	plain := append(os.Environ(), "AGENTRUN_JOURNAL="+journal, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted",
		"AGENTRUN_CODEC_KEYS=", "AGENTRUN_CODEC_KEY_FILE=")
	if code, out := testenv.Run(t, plain, time.Minute, starter, "--local", "--id", "r1", prompt); code != 3 {
		t.Fatalf("run: exit %d, want 3\n%s", code, out)
	}
	before, err := os.ReadFile(filepath.Join(journal, "r1.jsonl"))
	if err != nil || !bytes.Contains(before, []byte("orders database")) || bytes.Contains(before, []byte(`"sealed"`)) {
		t.Fatalf("the journal without keys is not plain: %v\n%s", err, before)
	}
	keyed := withKeys(plain, sealKey1)
	if code, out := testenv.Run(t, keyed, time.Minute, reconcile, "--local", "show", "r1"); code != 0 || !strings.Contains(out, "AwaitingApproval") {
		t.Fatalf("show of the plain journal with a key: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, keyed, time.Minute, reconcile, "--local", "approve", "r1", ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, keyed, time.Minute, starter, "--local", "--id", "r1"); code != 0 || !strings.Contains(out, "filed as TICKET-1") {
		t.Fatalf("resume with a key: exit %d\n%s", code, out)
	}
	after, err := os.ReadFile(filepath.Join(journal, "r1.jsonl"))
	if err != nil || !bytes.HasPrefix(after, before) {
		t.Fatalf("the plain records changed: %v", err)
	}
	assertNoSecrets(t, "the records written with the key", after[len(before):], "TICKET-1", "data owner")
	if code, out := testenv.Run(t, keyed, time.Minute, reconcile, "--local", "show", "r1"); code != 0 || !strings.Contains(out, "filed as TICKET-1") {
		t.Fatalf("show of the mixed journal with the key: exit %d\n%s", code, out)
	}
	n := bytes.Count(before, []byte("\n")) + 1
	want := "journal r1: record " + strconv.Itoa(n) + " is sealed under key k1"
	if code, out := testenv.Run(t, plain, time.Minute, reconcile, "--local", "show", "r1"); code != 2 || !strings.Contains(out, want) || strings.Contains(out, "TICKET-1") {
		t.Fatalf("show of the mixed journal without a key: exit %d, want 2 and %q:\n%s", code, want, out)
	}
}

// TestLocalListNamesUnreadable: reconcile --local list with a run sealed
// under a key it lacks still lists the run it can read, names the other
// as unreadable with the key it lacks, and exits 2; with the key both are
// listed and it exits 0.
func TestLocalListNamesUnreadable(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODEL=scripted", "AGENTRUN_CODEC_KEY_FILE=")
	for _, r := range []struct{ id, keys string }{{"sealed", sealKey1}, {"plain", ""}} {
		if code, out := testenv.Run(t, withKeys(env, r.keys), time.Minute, starter, "--local", "--id", r.id, prompt); code != 3 {
			t.Fatalf("run %s: exit %d, want 3 (AwaitingApproval)\n%s", r.id, code, out)
		}
	}
	code, out := testenv.Run(t, withKeys(env, ""), time.Minute, reconcile, "--local", "list")
	if code != 2 || !strings.Contains(out, "plain\tAwaitingApproval\t"+ticketStep) ||
		!strings.Contains(out, "sealed\tunreadable\t") || !strings.Contains(out, "sealed under key k1") ||
		!strings.Contains(out, "1 run(s) could not be read") {
		t.Fatalf("list without the key: exit %d, want 2, the plain run listed and the sealed one unreadable naming k1\n%s", code, out)
	}
	code, out = testenv.Run(t, withKeys(env, sealKey1), time.Minute, reconcile, "--local", "list")
	if code != 0 || !strings.Contains(out, "plain\tAwaitingApproval") || !strings.Contains(out, "sealed\tAwaitingApproval") || strings.Contains(out, "unreadable") {
		t.Fatalf("list with the key: exit %d, want 0 and both runs\n%s", code, out)
	}
}
