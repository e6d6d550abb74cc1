package e2e

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestProviderRateLimitThenAnswer: a real worker on openai:test-model whose
// server answers the first two chat requests with 429 and Retry-After: 1,
// then a text answer. Temporal retries CallModel after the server's delay,
// and the run completes with the answer after exactly 3 requests, all
// attempts of one activity.
func TestProviderRateLimitThenAnswer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const key = "sk-test-agentrun-ratelimit-0987654321"
	rateLimited := `{"error":{"message":"Rate limit reached for test-model in organization org-agentrun on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	answer := readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	const want = "Your request is filed as TICKET-7. The data owner will review it."
	fake := newFakeOpenAI(t, func(n int, _ *http.Request) (int, http.Header, string) {
		if n <= 2 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}, "X-Ratelimit-Remaining-Requests": {"0"}}, rateLimited
		}
		return http.StatusOK, nil, answer
	})
	worker := testenv.Start(t, f.env(fake.workerEnv(key)...), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter") // built before the clock starts
	const run = "e2e-provider-ratelimit"

	began := time.Now()
	code, out := testenv.Run(t, f.env(), 2*time.Minute, starter, "--id", run, "--wait", prompt)
	took := time.Since(began)
	if code != 0 || !strings.Contains(out, "started run "+run) || !strings.Contains(out, want) {
		t.Fatalf("starter --wait: exit %d after %v\n%s\nworker:\n%s", code, took, out, worker.Output())
	}

	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	if res.Answer != want || res.Steps != 1 || res.Usage.InputTokens != 182 || res.Usage.OutputTokens != 17 {
		t.Fatalf("result %+v, want answer %q, 1 step, 182/17 tokens", res, want)
	}
	reqs := fake.requests()
	if len(reqs) != 3 {
		t.Fatalf("the server got %d chat requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.path != "/v1/chat/completions" || r.auth != "Bearer "+key || r.model != "test-model" || r.lastUser != prompt ||
			strings.Join(r.tools, ",") != "lookup,create_ticket,find_ticket" {
			t.Fatalf("request %d: %+v", i+1, r)
		}
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("CallModel attempts: %d, want 3", n)
	}
	for i := 1; i < len(reqs); i++ {
		gap := reqs[i].at.Sub(reqs[i-1].at)
		t.Logf("request %d came %v after request %d", i+1, gap.Round(time.Millisecond), i)
		// Retry-After: 1 is honoured (900ms leaves room for clock
		// granularity); the retry policy alone would wait 1s, then 2s, so
		// the second gap below 1.9s shows the server's delay was used.
		if gap < 900*time.Millisecond {
			t.Fatalf("request %d came %v after request %d: Retry-After: 1 not honoured", i+1, gap, i)
		}
	}
	if gap := reqs[2].at.Sub(reqs[1].at); gap >= 1900*time.Millisecond {
		t.Fatalf("request 3 came %v after request 2: want about 1s (Retry-After: 1), not the policy's 2s backoff", gap)
	}
	t.Logf("run completed in %v (starter --wait)", took.Round(time.Millisecond))

	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusCompleted || st.Model != "openai:test-model" || len(st.Steps) != 1 || st.Steps[0].Name != "llm/1" {
		t.Fatalf("final state %+v, %v", st, err)
	}
	if got := statusAttr(t, srv, run); got != "Completed" {
		t.Fatalf("AgentRunStatus = %q, want Completed", got)
	}
	stopWorker(t, worker)
	if strings.Contains(worker.Output(), key) {
		t.Fatalf("the worker's log shows the API key:\n%s", worker.Output())
	}
}

// TestProviderRejectsKey: the server refuses the worker's key with 401, as
// OpenAI does (its message names a masked fragment of the key). The run
// fails at once, without a retry, with the provider's message; and neither
// the history nor the worker's log holds the key.
func TestProviderRejectsKey(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const (
		key    = "sk-test-agentrun-SECRET-1234567890"
		middle = "SECRET-1234567890"
	)
	fake := newFakeOpenAI(t, func(_ int, r *http.Request) (int, http.Header, string) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		return http.StatusUnauthorized, nil, testenv.MustJSON(map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided: " + maskKey(got) + ". You can find your API key at https://platform.openai.com/account/api-keys.",
			"type":    "invalid_request_error",
			"param":   nil,
			"code":    "invalid_api_key",
		}})
	})
	worker := testenv.Start(t, f.env(fake.workerEnv(key)...), testenv.Program(t, "worker"))
	starter := testenv.Program(t, "starter") // built before the clock starts
	const run = "e2e-provider-badkey"

	began := time.Now()
	code, out := testenv.Run(t, f.env(), 2*time.Minute, starter, "--id", run, "--wait", prompt)
	took := time.Since(began)
	t.Logf("starter --wait exited %d after %v", code, took.Round(time.Millisecond))
	const wantMsg = "Incorrect API key provided: sk-test-****7890"
	if code != 1 || !strings.Contains(out, wantMsg) || !strings.Contains(out, "Authentication") {
		t.Fatalf("starter --wait: exit %d, want 1 with the provider's message %q\n%s\nworker:\n%s", code, wantMsg, out, worker.Output())
	}
	// The first retry of a retryable failure would come 1s later, the
	// whole budget of 10 attempts takes minutes: 10s is "at once".
	if took > 10*time.Second {
		t.Fatalf("starter --wait took %v: a rejected key must fail the run at once", took)
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the server got %d chat requests, want 1", n)
	}
	if r := fake.requests()[0]; r.auth != "Bearer "+key || r.path != "/v1/chat/completions" {
		t.Fatalf("request: %+v", r)
	}
	if n := modelCalls(t, srv, run); n != 1 {
		t.Fatalf("CallModel attempts: %d, want 1", n)
	}

	desc, err := srv.Describe(t, run)
	if err != nil {
		t.Fatal(err)
	}
	if s := desc.GetWorkflowExecutionInfo().GetStatus(); s != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		t.Fatalf("workflow status %v, want Failed", s)
	}
	if got := statusAttr(t, srv, run); got != "Failed" {
		t.Fatalf("AgentRunStatus = %q, want Failed", got)
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusFailed || !strings.Contains(st.Reason, wantMsg) || len(st.Steps) != 0 {
		t.Fatalf("final state %+v, %v", st, err)
	}

	history := f.shownHistory(t, run)
	if !strings.Contains(history, wantMsg) {
		t.Fatalf("the history does not carry the provider's message %q:\n%s", wantMsg, history)
	}
	stopWorker(t, worker)
	assertNoSecret(t, map[string]string{"history": decodedHistory(t, history, prompt), "worker log": worker.Output(), "starter output": out}, key, middle)
}

// TestProviderScrubsEchoedKey: an OpenAI-compatible proxy that echoes the
// whole Authorization header in its 401 body. The provider's scrubber
// replaces the key, so the run's failure, its history and the worker's
// log show "[redacted]" and never the key.
func TestProviderScrubsEchoedKey(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const (
		key    = "sk-test-agentrun-ECHOED-5551234567"
		middle = "ECHOED-5551234567"
	)
	fake := newFakeOpenAI(t, func(_ int, r *http.Request) (int, http.Header, string) {
		return http.StatusUnauthorized, nil, testenv.MustJSON(map[string]any{"error": map[string]any{
			"message": "invalid credentials in header Authorization: " + r.Header.Get("Authorization"),
			"type":    "authentication_error",
			"code":    "invalid_api_key",
		}})
	})
	worker := testenv.Start(t, f.env(fake.workerEnv(key)...), testenv.Program(t, "worker"))
	const run = "e2e-provider-echoed-key"
	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	const wantMsg = "invalid credentials in header Authorization: Bearer [redacted]"
	if code != 1 || !strings.Contains(out, wantMsg) {
		t.Fatalf("starter --wait: exit %d, want 1 with %q\n%s\nworker:\n%s", code, wantMsg, out, worker.Output())
	}
	if n := len(fake.requests()); n != 1 {
		t.Fatalf("the server got %d chat requests, want 1", n)
	}
	if n := modelCalls(t, srv, run); n != 1 {
		t.Fatalf("CallModel attempts: %d, want 1", n)
	}
	if got := statusAttr(t, srv, run); got != "Failed" {
		t.Fatalf("AgentRunStatus = %q, want Failed", got)
	}
	history := f.shownHistory(t, run)
	if !strings.Contains(history, wantMsg) {
		t.Fatalf("the history does not carry %q:\n%s", wantMsg, history)
	}
	stopWorker(t, worker)
	assertNoSecret(t, map[string]string{"history": decodedHistory(t, history, prompt), "worker log": worker.Output(), "starter output": out}, key, middle)
}

// fakeOpenAI is an OpenAI-compatible server that records each chat request
// and lets answer reply to the n-th (from 1).
type fakeOpenAI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []chatRequest
}

// chatRequest is what the fake saw of one request.
type chatRequest struct {
	at       time.Time
	path     string
	auth     string
	model    string
	lastUser string
	tools    []string
	body     []byte // the whole request body
}

func newFakeOpenAI(t *testing.T, answer func(n int, r *http.Request) (status int, h http.Header, body string)) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		_ = json.Unmarshal(raw, &body)
		req := chatRequest{at: at, path: r.URL.Path, auth: r.Header.Get("Authorization"), model: body.Model, body: raw}
		for _, m := range body.Messages {
			if s, ok := m.Content.(string); ok && m.Role == "user" {
				req.lastUser = s
			}
		}
		for _, tl := range body.Tools {
			req.tools = append(req.tools, tl.Function.Name)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		n := len(f.reqs)
		f.mu.Unlock()
		status, h, out := answer(n, r)
		for k, v := range h {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.reqs...)
}

// workerEnv points a worker's openai:test-model at the fake, with key.
func (f *fakeOpenAI) workerEnv(key string) []string {
	return []string{"AGENTRUN_MODEL=openai:test-model", "OPENAI_BASE_URL=" + f.URL + "/v1", "OPENAI_API_KEY=" + key}
}

// maskKey hides a key as OpenAI's error messages do: "sk-test-****7890".
func maskKey(key string) string {
	if len(key) < 12 {
		return "****"
	}
	return key[:8] + "****" + key[len(key)-4:]
}

// statusAttr is the run's AgentRunStatus search attribute.
func statusAttr(t *testing.T, srv *testenv.Server, runID string) string {
	t.Helper()
	desc, err := srv.Describe(t, runID)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if p := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.StatusKey.GetName()]; p != nil {
		if err := json.Unmarshal(p.GetData(), &s); err != nil {
			t.Fatalf("AgentRunStatus %s: %v", p.GetData(), err)
		}
	}
	return s
}

// stopWorker stops a worker gracefully, so that its whole log is in.
func stopWorker(t *testing.T, p *testenv.Proc) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d after SIGTERM:\n%s", code, p.Output())
	}
}

// readFile returns a file's content.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodedHistory returns the JSON of a history as the CLI printed it,
// followed by the decoded text of every payload in it (the CLI prints a
// payload's data in base64, where a plain search would not see a key). It
// fails the test unless the decoded text shows want, proof that the
// payloads were found.
func decodedHistory(t *testing.T, history, want string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(history), &v); err != nil {
		t.Fatalf("history is not JSON: %v\n%s", err, history)
	}
	var b strings.Builder
	b.WriteString(history)
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			if d, err := base64.StdEncoding.DecodeString(v); err == nil {
				b.WriteString("\n")
				b.Write(d)
			}
		}
	}
	walk(v)
	decoded := b.String()[len(history):]
	if !strings.Contains(decoded, want) {
		t.Fatalf("no payload of the history decodes to a text holding %q", want)
	}
	return b.String()
}

// assertNoSecret fails the test for each text that holds one of secrets.
func assertNoSecret(t *testing.T, texts map[string]string, secrets ...string) {
	t.Helper()
	for what, text := range texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds %q:\n%s", what, secret, text)
			}
		}
	}
}
