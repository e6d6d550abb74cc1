package cli_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
)

// modelServer is an OpenAI-compatible server on a loopback address that
// refuses connections until up starts it: a model server that is down,
// then comes back.
type modelServer struct {
	addr string
	mu   sync.Mutex
	n    int // chat requests answered
}

// newModelServer reserves a loopback port and closes it: connections to
// it are refused until up.
func newModelServer(t *testing.T) *modelServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return &modelServer{addr: addr}
}

// up starts serving: each chat request gets answer's status and body.
func (m *modelServer) up(t *testing.T, answer func() (int, string)) {
	t.Helper()
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		t.Fatalf("start the model server again on %s: %v", m.addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		m.mu.Lock()
		m.n++
		m.mu.Unlock()
		status, body := answer()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func (m *modelServer) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// url is the API root the starter is given.
func (m *modelServer) url() string { return "http://" + m.addr + "/v1" }

// refusedLine is how the driver says that a connection to m was refused.
func (m *modelServer) refusedLine() string {
	return "NetworkError: connection refused (" + m.url() + "/chat/completions)"
}

// openAIAnswer is a chat completion with a final answer (llm/providers/testdata).
func openAIAnswer(t *testing.T) (body, text string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), "Your request is filed as TICKET-7. The data owner will review it."
}

// retryEnv is the environment of a local run of openai:test-model on m,
// with attempts attempts and a first wait of interval.
func retryEnv(t *testing.T, m *modelServer, attempts int, interval string) (env []string, jdir string) {
	t.Helper()
	dir := t.TempDir()
	jdir = filepath.Join(dir, "journal")
	return append(os.Environ(), "AGENTRUN_JOURNAL="+jdir, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODEL=openai:test-model", "OPENAI_BASE_URL="+m.url(), "OPENAI_API_KEY=sk-test-agentrun-local-retry-123456",
		fmt.Sprintf("AGENTRUN_LOCAL_ATTEMPTS=%d", attempts), "AGENTRUN_LOCAL_RETRY_INTERVAL="+interval), jdir
}

// journalOf returns a run's records, described (testenv.Describe).
func journalOf(t *testing.T, jdir, run string) ([]journal.Record, string) {
	t.Helper()
	store, err := journal.NewFileStore(jdir)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	return recs, strings.Join(testenv.Describe(recs), "|")
}

// TestLocalRetriesUntilModelServerComesUp: starter --local with the model
// server down retries the model call, printing one line per retry (step,
// attempt N of M, the refused connection, the wait), and the same process
// completes the run once the server comes up: one model call recorded,
// one request answered, no stop recorded.
func TestLocalRetriesUntilModelServerComesUp(t *testing.T) {
	t.Parallel()
	m := newModelServer(t)
	env, jdir := retryEnv(t, m, 30, "50ms")
	const run = "local-retry-up"
	p := testenv.Start(t, env, testenv.Program(t, "starter"), "--local", "--id", run, prompt)
	second := "llm/1: attempt 2 of 30 failed: " + m.refusedLine() + "; next attempt in 100ms\n"
	if err := p.WaitLogged(t.Context(), second, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	answer, text := openAIAnswer(t)
	m.up(t, func() (int, string) { return http.StatusOK, answer })
	if code := p.Wait(t, time.Minute); code != cli.ExitOK {
		t.Fatalf("starter --local: exit %d, want 0\n%s", code, p.Output())
	}
	out := p.Output()
	if !strings.HasPrefix(out, "llm/1: attempt 1 of 30 failed: "+m.refusedLine()+"; next attempt in 50ms\n"+second) ||
		!strings.HasSuffix(out, "run "+run+": Completed\n"+text+"\n") {
		t.Fatalf("starter --local output:\n%s", out)
	}
	if n := m.requests(); n != 1 {
		t.Fatalf("the model server answered %d requests, want 1", n)
	}
	if _, got := journalOf(t, jdir, run); got != "run.started|step.completed llm/1 model|run.completed" {
		t.Fatalf("records %s", got)
	}
}

// TestLocalGivesUpAndResumes: with the model server down the driver
// makes its attempts, printing each retry, then stops: it records why
// (run.stopped), prints one line with the resume command and exits
// ExitStopped. reconcile --local show says the same. With the server back,
// starter --local --id RUN makes the call afresh and completes the run:
// one model call, one request.
func TestLocalGivesUpAndResumes(t *testing.T) {
	t.Parallel()
	m := newModelServer(t)
	env, jdir := retryEnv(t, m, 3, "20ms")
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "local-retry-stop"
	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, prompt)
	resume := "resume with " + starter + " --local --id " + run
	why := ": llm/1: " + m.refusedLine() + "; " + resume + "\n"
	lines := strings.SplitAfter(out, "\n")
	if code != cli.ExitStopped || len(lines) != 4 || lines[3] != "" ||
		lines[0] != "llm/1: attempt 1 of 3 failed: "+m.refusedLine()+"; next attempt in 20ms\n" ||
		lines[1] != "llm/1: attempt 2 of 3 failed: "+m.refusedLine()+"; next attempt in 40ms\n" ||
		!strings.HasPrefix(lines[2], "run "+run+": stopped after 3 attempts over ") || !strings.HasSuffix(lines[2], why) {
		t.Fatalf("starter --local: exit %d, want %d (stopped), two retries and the stop with %q:\n%s", code, cli.ExitStopped, why, out)
	}
	recs, got := journalOf(t, jdir, run)
	if got != "run.started|run.stopped" {
		t.Fatalf("records %s, want run.started, run.stopped", got)
	}
	if s := recs[1].Stopped; s == nil || s.Step != "llm/1" || s.Attempts != 3 || s.Error != m.refusedLine() || s.Over < 60*time.Millisecond || s.Over > 30*time.Second {
		t.Fatalf("run.stopped %+v: want llm/1, 3 attempts over at least the 60ms of waits, %q", s, m.refusedLine())
	}

	code, show := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	showWhy := ": llm/1: " + m.refusedLine() + "; no driver runs it now: " + resume + "\n"
	if code != 0 || !strings.HasPrefix(show, "run "+run+": Running (2 records)\n  stopped after 3 attempts over ") || !strings.Contains(show, showWhy) {
		t.Fatalf("reconcile --local show: exit %d, want Running and the stop with %q:\n%s", code, showWhy, show)
	}
	code, list := testenv.Run(t, env, time.Minute, reconcile, "--local", "list")
	if want := run + "\tRunning\tstopped at llm/1; " + resume + "\n"; code != 0 || list != want {
		t.Fatalf("reconcile --local list: exit %d, want %q:\n%s", code, want, list)
	}

	answer, text := openAIAnswer(t)
	m.up(t, func() (int, string) { return http.StatusOK, answer })
	code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", run)
	if code != 0 || out != "run "+run+": Completed\n"+text+"\n" {
		t.Fatalf("the resumed run: exit %d, want 0 and Completed:\n%s", code, out)
	}
	if n := m.requests(); n != 1 {
		t.Fatalf("the model server answered %d requests, want 1", n)
	}
	if _, got := journalOf(t, jdir, run); got != "run.started|run.stopped|step.completed llm/1 model|run.completed" {
		t.Fatalf("records %s", got)
	}
	code, show = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	if code != 0 || !strings.HasPrefix(show, "run "+run+": Completed (4 records)\n") || strings.Contains(show, "stopped") ||
		!strings.Contains(show, "llm/1                        model completed  starts=0") || !strings.Contains(show, "budget: 1 of 25 model calls") {
		t.Fatalf("reconcile --local show after the resume: exit %d\n%s", code, show)
	}
}

// TestLocalDoesNotRetryRejectedKey: a 401 is not retried: the driver
// stops after one attempt and one request, with the provider's words and
// the resume command.
func TestLocalDoesNotRetryRejectedKey(t *testing.T) {
	t.Parallel()
	m := newModelServer(t)
	m.up(t, func() (int, string) {
		return http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: sk-test-****3456.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	})
	env, jdir := retryEnv(t, m, 10, "20ms")
	starter := testenv.Program(t, "starter")
	const run = "local-retry-401"
	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", run, prompt)
	want := "run " + run + ": stopped after 1 attempt over "
	why := ": llm/1: Authentication (HTTP 401): Incorrect API key provided: sk-test-****3456.; resume with " + starter + " --local --id " + run + "\n"
	if code != cli.ExitStopped || !strings.HasPrefix(out, want) || !strings.HasSuffix(out, why) || strings.Count(out, "\n") != 1 {
		t.Fatalf("starter --local: exit %d, want %d and one line %q...%q:\n%s", code, cli.ExitStopped, want, why, out)
	}
	if n := m.requests(); n != 1 {
		t.Fatalf("the model server answered %d requests, want 1 (no retry)", n)
	}
	if _, got := journalOf(t, jdir, run); got != "run.started|run.stopped" {
		t.Fatalf("records %s", got)
	}
}

// TestLocalRetryWaitInterrupted: SIGTERM while the driver waits for its
// next attempt ends starter --local at once, saying how to resume; the
// journal records where it stopped (run.stopped, interrupted: the step,
// the failed attempt, its error), and reconcile --local show names them,
// says that no driver runs the run, and prints the resume command, rather
// than a bare "Running".
func TestLocalRetryWaitInterrupted(t *testing.T) {
	t.Parallel()
	m := newModelServer(t)
	env, jdir := retryEnv(t, m, 10, "1h")
	const run = "local-retry-sigterm"
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	p := testenv.Start(t, env, starter, "--local", "--id", run, prompt)
	if err := p.WaitLogged(t.Context(), "llm/1: attempt 1 of 10 failed: "+m.refusedLine()+"; next attempt in 1h0m0s\n", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.Wait(t, 30*time.Second)
	resume := starter + " --local --id " + run
	want := "starter: run " + run + ": interrupted (context canceled); nothing is lost: resume it with " + resume + "\n"
	if code != cli.ExitError || !strings.HasSuffix(p.Output(), want) || time.Since(began) > 5*time.Second {
		t.Fatalf("after SIGTERM: exit %d after %v, want %d at once ending %q:\n%s", code, time.Since(began), cli.ExitError, want, p.Output())
	}
	recs, got := journalOf(t, jdir, run)
	if got != "run.started|run.stopped" {
		t.Fatalf("records %s, want run.started, run.stopped", got)
	}
	if s := recs[1].Stopped; s == nil || !s.Interrupted || s.Step != "llm/1" || s.Attempts != 1 || s.Error != m.refusedLine() {
		t.Fatalf("run.stopped %+v: want interrupted at llm/1 after 1 failed attempt, %q", s, m.refusedLine())
	}
	code, show := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	head := "run " + run + ": Running (2 records)\n  interrupted after 1 failed attempt over "
	why := ": llm/1: " + m.refusedLine() + "; no driver runs it now: resume with " + resume + "\n"
	if first, _, _ := strings.Cut(strings.TrimPrefix(show, head), "\n"); code != 0 || !strings.HasPrefix(show, head) || !strings.HasSuffix(first+"\n", why) {
		t.Fatalf("reconcile --local show: exit %d, want %q...%q:\n%s", code, head, why, show)
	}
}

// TestLocalRetryDriverKilled: a driver SIGKILLed while it retries writes
// nothing, and reconcile --local show says that no driver runs the run and
// how to resume it; while a driver runs it, show names that process.
func TestLocalRetryDriverKilled(t *testing.T) {
	t.Parallel()
	m := newModelServer(t)
	env, _ := retryEnv(t, m, 10, "1h")
	const run = "local-retry-sigkill"
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	p := testenv.Start(t, env, starter, "--local", "--id", run, prompt)
	if err := p.WaitLogged(t.Context(), "llm/1: attempt 1 of 10 failed: "+m.refusedLine()+"; next attempt in 1h0m0s\n", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	code, show := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	if line := fmt.Sprintf("  a driver (process %d) runs it now\n", p.Pid()); code != 0 || !strings.HasPrefix(show, "run "+run+": Running (1 record)\n"+line) {
		t.Fatalf("reconcile --local show while driven: exit %d, want %q:\n%s", code, line, show)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait(t, 30*time.Second)
	code, show = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", run)
	line := "  no driver runs it now (its last driver ended without recording why: killed, or its host went down): resume with " + starter + " --local --id " + run + "\n"
	if code != 0 || !strings.HasPrefix(show, "run "+run+": Running (1 record)\n"+line) {
		t.Fatalf("reconcile --local show after SIGKILL: exit %d, want %q:\n%s", code, line, show)
	}
}
