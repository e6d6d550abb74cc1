package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// emptyAnswer is a chat completion whose final answer has no text.
func emptyAnswer(t *testing.T) string {
	t.Helper()
	s := readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	out := strings.Replace(s, `"content": "Your request is filed as TICKET-7. The data owner will review it."`, `"content": ""`, 1)
	if out == s {
		t.Fatal("the test data changed: no content to empty")
	}
	return out
}

const emptyLine = "empty: the model returned nothing: the final answer has no text"

// TestEmptyAnswer: a worker whose model server answers with no text. The
// run completes flagged: the starter, the state, the current details,
// reconcile show and show --step say the model returned nothing. The
// printed counts and Web UI links are checked on the way.
func TestEmptyAnswer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := emptyAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	env := f.env(fake.workerEnv("sk-test-empty")...)
	worker := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-model-empty"

	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, "run "+run+": Completed\n\n  "+emptyLine) {
		t.Fatalf("starter --wait: exit %d, want 0 and the empty line\n%s\nworker:\n%s", code, out, worker.Output())
	}
	// One step, in the singular; the link goes to the dev server's own UI
	// (its port plus 1000), as AGENTRUN_UI_URL is unset.
	_, port, _ := net.SplitHostPort(srv.HostPort)
	p, _ := strconv.Atoi(port)
	link := fmt.Sprintf("  Web UI: http://localhost:%d/namespaces/default/workflows/%s\n", p+1000, run)
	if !strings.Contains(out, " output tokens over 1 step\n"+link) {
		t.Fatalf("starter --wait: want the usage over 1 step and the link %q\n%s", link, out)
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusCompleted || !st.Empty || st.CutOff || st.Answer != "" {
		t.Fatalf("state %+v, %v; want Completed and empty", st, err)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Empty**: the model returned nothing") {
		t.Fatalf("current details do not say the answer is empty:\n%s", d)
	}
	reconcile := testenv.Program(t, "reconcile")
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if code != 0 || !strings.Contains(out, "  "+emptyLine) {
		t.Fatalf("reconcile show: exit %d, want the empty line\n%s", code, out)
	}
	// AGENTRUN_UI_URL set: the link follows it.
	code, out = testenv.Run(t, append(env, "AGENTRUN_UI_URL=https://ui.example.com/"), time.Minute, reconcile, "show", run)
	if want := "Web UI: https://ui.example.com/namespaces/default/workflows/" + run + "\n"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("reconcile show with AGENTRUN_UI_URL: exit %d, want %q\n%s", code, want, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", "llm/1")
	if code != 0 || !strings.Contains(out, "output: openai:test-model, finish stop") || !strings.Contains(out, "\n"+emptyLine) {
		t.Fatalf("reconcile show --step llm/1: exit %d, want the empty line\n%s", code, out)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the server got %d chat requests, want 1", n)
	}
	stopWorker(t, worker)
}

// TestEmptyAnswerFailsRun: the same answer on a worker with
// AGENTRUN_FAIL_ON_EMPTY_ANSWER=1 fails the run, after one model call, in
// one line that says the model returned nothing.
func TestEmptyAnswerFailsRun(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := emptyAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	worker := testenv.Start(t, f.env(append(fake.workerEnv("sk-test-empty"), "AGENTRUN_FAIL_ON_EMPTY_ANSWER=1")...), testenv.Program(t, "worker"))
	const run = "e2e-model-empty-fails"

	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	const reason = "llm/1: the model returned nothing: the final answer has no text (finish reason stop); this run fails on empty answers (AGENTRUN_FAIL_ON_EMPTY_ANSWER)"
	if code != 1 || !strings.Contains(out, "Failed") || !strings.Contains(out, reason) {
		t.Fatalf("starter --wait: exit %d, want 1 and Failed: %s\n%s\nworker:\n%s", code, reason, out, worker.Output())
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusFailed || st.Reason != reason || st.Empty {
		t.Fatalf("state %+v, %v; want Failed: %s", st, err, reason)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the server got %d chat requests, want 1", n)
	}
	stopWorker(t, worker)
}

// TestLocalEmptyAnswer: the local engine on the same server: the run
// completes flagged as empty (starter, reconcile --local show, show
// --step), and with AGENTRUN_FAIL_ON_EMPTY_ANSWER=1 another run fails.
func TestLocalEmptyAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := emptyAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"))
	env = append(env, fake.workerEnv("sk-test-empty")...)
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")

	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "local-empty", prompt)
	if code != 0 || !strings.Contains(out, "run local-empty: Completed\n\n  "+emptyLine) {
		t.Fatalf("starter --local: exit %d, want the empty line\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "local-empty")
	if code != 0 || !strings.Contains(out, "run local-empty: Completed") || !strings.Contains(out, "  "+emptyLine) {
		t.Fatalf("reconcile --local show: exit %d, want the empty line\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "local-empty", "--step", "llm/1")
	if code != 0 || !strings.Contains(out, "\n"+emptyLine) {
		t.Fatalf("reconcile --local show --step llm/1: exit %d, want the empty line\n%s", code, out)
	}

	code, out = testenv.Run(t, append(env, "AGENTRUN_FAIL_ON_EMPTY_ANSWER=1"), time.Minute, starter, "--local", "--id", "local-empty-fails", prompt)
	if code != 1 || !strings.Contains(out, "run local-empty-fails: Failed: llm/1: the model returned nothing") || !strings.Contains(out, "AGENTRUN_FAIL_ON_EMPTY_ANSWER") {
		t.Fatalf("starter --local with AGENTRUN_FAIL_ON_EMPTY_ANSWER=1: exit %d, want 1 and Failed\n%s", code, out)
	}
	if n := len(fake.requests()); n != 2 {
		t.Fatalf("the server got %d chat requests, want 2", n)
	}
}
