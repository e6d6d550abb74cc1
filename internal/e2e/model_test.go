package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestModelRequestTimeout: a real worker on openai:test-model with
// AGENTRUN_MODEL_TIMEOUT=2s, whose server accepts the first chat request and
// never answers it, then answers the second. The worker abandons the first
// request after 2s with a retryable Timeout, Temporal retries the step, and
// the run completes with one model step made of two attempts and two
// requests.
func TestModelRequestTimeout(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	const want = "Your request is filed as TICKET-7. The data owner will review it."
	fake := newFakeOpenAI(t, func(n int, r *http.Request) (int, http.Header, string) {
		if n == 1 {
			<-r.Context().Done() // the client gave up (or the test ended)
			return http.StatusOK, nil, answer
		}
		return http.StatusOK, nil, answer
	})
	worker := testenv.Start(t, f.env(append(fake.workerEnv("sk-test-timeout"), "AGENTRUN_MODEL_TIMEOUT=2s")...), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter")
	const run = "e2e-model-timeout"

	began := time.Now()
	code, out := testenv.Run(t, f.env(), 2*time.Minute, starter, "--id", run, "--wait", prompt)
	took := time.Since(began)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("starter --wait: exit %d after %v\n%s\nworker:\n%s", code, took, out, worker.Output())
	}
	reqs := fake.requests()
	if len(reqs) != 2 {
		t.Fatalf("the server got %d chat requests, want 2", len(reqs))
	}
	gap := reqs[1].at.Sub(reqs[0].at)
	t.Logf("request 2 came %v after request 1; the run took %v", gap.Round(time.Millisecond), took.Round(time.Millisecond))
	// 2s of timeout, then the retry policy's first interval of 1s; a
	// request held until the step timeout would take minutes.
	if gap < 2*time.Second || gap > 30*time.Second {
		t.Fatalf("request 2 came %v after request 1, want about 3s (a 2s timeout, then a 1s retry interval)", gap)
	}
	if n := modelCalls(t, srv, run); n != 2 {
		t.Fatalf("CallModel attempts: %d, want 2", n)
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusCompleted || st.StepCount != 1 || len(st.Steps) != 1 || st.Steps[0].Name != "llm/1" || st.CutOff {
		t.Fatalf("final state %+v, %v; want Completed after the one step llm/1", st, err)
	}
	history := f.shownHistory(t, run)
	if !strings.Contains(history, "within the request timeout of 2s (AGENTRUN_MODEL_TIMEOUT)") {
		t.Fatalf("the history does not carry the first attempt's Timeout failure")
	}
	stopWorker(t, worker)
}

// cutAnswer is a chat completion whose final text the length limit cut.
func cutAnswer(t *testing.T) string {
	t.Helper()
	s := readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	s = strings.Replace(s, `"finish_reason": "stop"`, `"finish_reason": "length"`, 1)
	s = strings.Replace(s, "Your request is filed as TICKET-7. The data owner will review it.", "Your request is filed as TICKET-7. The data", 1)
	if !strings.Contains(s, `"finish_reason": "length"`) {
		t.Fatal("the test data changed: no finish_reason to replace")
	}
	return s
}

const cutText = "Your request is filed as TICKET-7. The data"

// writeModels writes a models file with settings for openai:test-model.
func writeModels(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.json")
	const file = `{"openai:test-model": {"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_tokens": 64, "extra": {"top_k": 40}}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const settingsLine = `settings: temperature=0.2 top_p=0.9 seed=7 max_tokens=64 extra={"top_k":40}`

// assertSettingsSent fails unless the request body carries the models
// file's settings.
func assertSettingsSent(t *testing.T, r chatRequest) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("request body: %v\n%s", err, r.body)
	}
	for k, v := range map[string]float64{"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_completion_tokens": 64, "top_k": 40} {
		if got, ok := body[k].(float64); !ok || got != v {
			t.Errorf("request body %s = %v, want %v\n%s", k, body[k], v, r.body)
		}
	}
}

// TestModelSettingsAndCutAnswer: a worker with a models file (AGENTRUN_MODELS)
// whose server answers with a final text cut by the length limit. The
// request carries the settings; the run completes, and the starter, the
// state, the current details, reconcile show and show --step say the answer
// was cut off; show --step shows the settings the model was asked with.
func TestModelSettingsAndCutAnswer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := cutAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	env := f.env(append(fake.workerEnv("sk-test-cut"), "AGENTRUN_MODELS="+writeModels(t))...)
	worker := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-model-cut"

	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, "run "+run+": Completed\n"+cutText) || !strings.Contains(out, "cut off: the final answer was cut off by the model's length limit") {
		t.Fatalf("starter --wait: exit %d\n%s\nworker:\n%s", code, out, worker.Output())
	}
	reqs := fake.requests()
	if len(reqs) != 1 {
		t.Fatalf("the server got %d chat requests, want 1", len(reqs))
	}
	assertSettingsSent(t, reqs[0])
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusCompleted || !st.CutOff || st.Answer != cutText {
		t.Fatalf("state %+v, %v; want Completed and cut off", st, err)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Cut off**: the final answer was cut off") {
		t.Fatalf("current details do not say the answer was cut off:\n%s", d)
	}
	reconcile := testenv.Program(t, "reconcile")
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if code != 0 || !strings.Contains(out, "  cut off: the final answer was cut off by the model's length limit") {
		t.Fatalf("reconcile show: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", "llm/1")
	if code != 0 || !strings.Contains(out, "output: openai:test-model, finish length") || !strings.Contains(out, settingsLine) || !strings.Contains(out, "cut off: the final answer") {
		t.Fatalf("reconcile show --step llm/1: exit %d, want the settings and the cut\n%s", code, out)
	}
	stopWorker(t, worker)
}

// TestCutAnswerFailsRun: the same answer on a worker with
// AGENTRUN_FAIL_ON_CUT_ANSWER=1 fails the run with a reason that says why,
// after one model call.
func TestCutAnswerFailsRun(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := cutAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	worker := testenv.Start(t, f.env(append(fake.workerEnv("sk-test-cut"), "AGENTRUN_FAIL_ON_CUT_ANSWER=1")...), testenv.Program(t, "worker"))
	const run = "e2e-model-cut-fails"

	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	const reason = "llm/1: the final answer was cut off by the model's length limit"
	if code != 1 || !strings.Contains(out, "Failed") || !strings.Contains(out, reason) {
		t.Fatalf("starter --wait: exit %d, want 1 and Failed: %s\n%s\nworker:\n%s", code, reason, out, worker.Output())
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusFailed || !strings.Contains(st.Reason, "AGENTRUN_FAIL_ON_CUT_ANSWER") || st.CutOff {
		t.Fatalf("state %+v, %v; want Failed naming AGENTRUN_FAIL_ON_CUT_ANSWER", st, err)
	}
	if got := statusAttr(t, srv, run); got != "Failed" {
		t.Fatalf("AgentRunStatus = %q, want Failed", got)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the server got %d chat requests, want 1", n)
	}
	stopWorker(t, worker)
}

// TestLocalCutAnswer: the local engine, on the same server: the request
// carries the models file's settings, the run completes flagged as cut off
// (starter, reconcile --local show, show --step), and with
// AGENTRUN_FAIL_ON_CUT_ANSWER=1 another run fails.
func TestLocalCutAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := cutAnswer(t)
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, body })
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODELS="+writeModels(t))
	env = append(env, fake.workerEnv("sk-test-cut")...)
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")

	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "local-cut", prompt)
	if code != 0 || !strings.Contains(out, "run local-cut: Completed\n"+cutText) || !strings.Contains(out, "cut off: the final answer was cut off") {
		t.Fatalf("starter --local: exit %d\n%s", code, out)
	}
	if reqs := fake.requests(); len(reqs) != 1 {
		t.Fatalf("the server got %d chat requests, want 1", len(reqs))
	} else {
		assertSettingsSent(t, reqs[0])
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "local-cut")
	if code != 0 || !strings.Contains(out, "run local-cut: Completed") || !strings.Contains(out, "  cut off: the final answer was cut off") {
		t.Fatalf("reconcile --local show: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "local-cut", "--step", "llm/1")
	if code != 0 || !strings.Contains(out, settingsLine) || !strings.Contains(out, "cut off: the final answer") {
		t.Fatalf("reconcile --local show --step llm/1: exit %d\n%s", code, out)
	}
	// Resuming the completed run says it again, from the record.
	code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", "local-cut")
	if code != 0 || !strings.Contains(out, "cut off: the final answer was cut off") || len(fake.requests()) != 1 {
		t.Fatalf("starter --local (resume): exit %d, %d requests\n%s", code, len(fake.requests()), out)
	}

	code, out = testenv.Run(t, append(env, "AGENTRUN_FAIL_ON_CUT_ANSWER=1"), time.Minute, starter, "--local", "--id", "local-cut-fails", prompt)
	if code != 1 || !strings.Contains(out, "run local-cut-fails: Failed: llm/1: the final answer was cut off") || !strings.Contains(out, "AGENTRUN_FAIL_ON_CUT_ANSWER") {
		t.Fatalf("starter --local with AGENTRUN_FAIL_ON_CUT_ANSWER=1: exit %d, want 1 and Failed\n%s", code, out)
	}
	if n := len(fake.requests()); n != 2 {
		t.Fatalf("the server got %d chat requests, want 2", n)
	}
}

// currentDetails is the run's current details, as the Web UI shows them:
// the answer of the built-in __temporal_workflow_metadata query.
func currentDetails(t *testing.T, srv *testenv.Server, runID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	v, err := srv.Client.QueryWorkflow(ctx, runID, "", "__temporal_workflow_metadata")
	if err != nil {
		t.Fatalf("metadata query: %v", err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return md.GetCurrentDetails()
}
