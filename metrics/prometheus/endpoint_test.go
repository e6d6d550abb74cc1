package prometheus

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/metrics"
)

func TestValidateAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{":9464", true},
		{"127.0.0.1:9464", true},
		{"0.0.0.0:1", true},
		{"[::1]:9464", true},
		{"localhost:65535", true},
		{"metrics.internal:9464", true},
		{"", false},
		{"9464", false},
		{":", false},
		{":0", false},
		{":65536", false},
		{":http", false},
		{"127.0.0.1", false},
		{"127.0.0.1:9464:1", false},
		{"host name:9464", false},
		{"http://127.0.0.1:9464", false},
		{"::1:9464", false},
		{"[fe80::1%eth0]:9464", true},
		{"[a:b]:9464", false},
	} {
		err := ValidateAddr(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateAddr(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("ValidateAddr(%q): error %q is not one line", tc.addr, err)
		}
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, err := io.ReadAll(rec.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, string(b)
}

func TestHealthStates(t *testing.T) {
	t.Parallel()
	e, err := newEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	h := e.srv.Handler
	for _, step := range []struct {
		do   func()
		code int
	}{
		{func() {}, http.StatusServiceUnavailable},
		{e.Ready, http.StatusOK},
		{e.Stopping, http.StatusServiceUnavailable},
	} {
		step.do()
		code, body := get(t, h, "/healthz")
		if code != step.code || strings.Count(body, "\n") != 1 {
			t.Errorf("/healthz: %d %q, want %d and one line", code, body, step.code)
		}
	}
}

func TestRecorderNames(t *testing.T) {
	t.Parallel()
	e, err := newEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	r, err := metrics.NewRecorder(e.Provider)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r.Step(ctx, agent.KindModel, metrics.Completed, 2*time.Second)
	r.Step(ctx, agent.KindWrite, metrics.Indeterminate, time.Millisecond)
	r.Decision(ctx, metrics.Approve)
	r.Tokens(ctx, "scripted", agent.Usage{InputTokens: 12, OutputTokens: 3})
	r.Tokens(ctx, "anthropic:claude", agent.Usage{InputTokens: 2095, OutputTokens: 503, CacheReadTokens: 1805, CacheWriteTokens: 268})
	var nilRecorder *metrics.Recorder
	nilRecorder.Step(ctx, agent.KindRead, metrics.Failed, time.Second) // records nothing, does not panic

	_, body := get(t, e.srv.Handler, "/metrics")
	for _, want := range []string{
		`agentrun_steps_total{kind="model",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",outcome="completed"} 1`,
		`agentrun_steps_total{kind="write",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",outcome="indeterminate"} 1`,
		`agentrun_step_duration_seconds_bucket{kind="model",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",le="2.5"} 1`,
		`agentrun_writes_indeterminate_total{otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 1`,
		`agentrun_approvals_total{decision="approve",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 1`,
		`agentrun_tokens_total{direction="input",model="scripted",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 12`,
		`agentrun_tokens_total{direction="output",model="scripted",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 3`,
		`agentrun_tokens_total{direction="input",model="anthropic:claude",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 2095`,
		`agentrun_tokens_total{direction="cache_read",model="anthropic:claude",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 1805`,
		`agentrun_tokens_total{direction="cache_write",model="anthropic:claude",otel_scope_name="` + metrics.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 268`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `kind="read"`) {
		t.Error("a nil Recorder recorded a step")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func TestListenPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Listen on a port in use: %v, want one line saying the address is in use", err)
	}
}

func TestListenServes(t *testing.T) {
	t.Parallel()
	e, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + e.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/healthz before Ready: %d, want 503", resp.StatusCode)
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + e.Addr + "/healthz"); err == nil {
		t.Error("still serving after Close")
	}
}
