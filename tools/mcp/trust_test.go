package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit/mcptest"
)

// TestStdioServerSeesMinimalEnvironment: the npm everything server, started
// by a process that holds provider keys, Temporal credentials and a journal
// URL, reports (its get-env tool) only the inherited minimum and what Env
// gives it.
func TestStdioServerSeesMinimalEnvironment(t *testing.T) {
	bin := mcptest.Bin(t, mcptest.Everything)
	worker := map[string]string{
		"OPENAI_API_KEY":    "sk-openai-worker-0001",
		"ANTHROPIC_API_KEY": "sk-ant-worker-0002",
		"TEMPORAL_API_KEY":  "tmprl-worker-0003",
		"TEMPORAL_ADDRESS":  "127.0.0.1:7233",
		"AGENTRUN_JOURNAL":  "postgres://agent:pg-worker-0004@db/agentrun",
		"TERM":              "xterm",
	}
	for k, v := range worker {
		t.Setenv(k, v) // not parallel: the process's environment
	}
	c := connect(t, Server{Name: "everything", Command: bin, Env: map[string]string{"AGENTRUN_MCP_TEST": "from the config", "TERM": "dumb"}})
	env := call(t, listTools(t, c)["get-env"], `{}`)
	var vars map[string]string
	if err := json.Unmarshal([]byte(env.Content), &vars); err != nil {
		t.Fatalf("get-env: %v: %s", err, env.Content)
	}
	for k, v := range worker {
		if k == "TERM" {
			continue
		}
		if _, ok := vars[k]; ok || strings.Contains(env.Content, v) {
			t.Errorf("the server sees %s of the worker: %s", k, env.Content)
		}
	}
	if vars["PATH"] != os.Getenv("PATH") || vars["AGENTRUN_MCP_TEST"] != "from the config" || vars["TERM"] != "dumb" {
		t.Errorf("server env PATH=%q AGENTRUN_MCP_TEST=%q TERM=%q; want the inherited PATH and the configured values (Env wins)", vars["PATH"], vars["AGENTRUN_MCP_TEST"], vars["TERM"])
	}
}

func TestServerEnv(t *testing.T) {
	t.Parallel()
	got := serverEnv([]string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "HOME=/root", "TEMPORAL_API_KEY=k", "USER=me", "AGENTRUN_JOURNAL=/var/j"},
		map[string]string{"USER": "svc", "TOKEN": "t"})
	want := []string{"PATH=/bin", "HOME=/root", "TOKEN=t", "USER=svc"}
	if !slices.Equal(got, want) {
		t.Fatalf("serverEnv = %q, want %q", got, want)
	}
}

// TestHeadersNotSentAfterRedirect: an HTTP server whose endpoint redirects
// to another host gets the configured headers; the host it redirects to
// never does, and the session works through it.
func TestHeadersNotSentAfterRedirect(t *testing.T) {
	t.Parallel()
	p := newInProcess(t) // on 127.0.0.1: reached below as localhost, another host
	target := strings.Replace(p.url, "127.0.0.1", "localhost", 1)
	var mu sync.Mutex
	var first []string
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first = append(first, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	c := connect(t, Server{Name: "redirected", URL: redirect.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer header-secret-0005", "X-Agentrun": "yes"}})
	if got := call(t, listTools(t, c)["reader"], `{}`); got.Content != "read" {
		t.Fatalf("reader through the redirect = %+v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(first) == 0 || first[0] != "Bearer header-secret-0005" {
		t.Fatalf("the endpoint's host got Authorization %q, want the configured header", first)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.headers) == 0 {
		t.Fatal("the redirect target got no request")
	}
	for _, h := range p.headers {
		if h != "|" {
			t.Fatalf("the host redirected to got headers X-Agentrun|Authorization %q, want none", p.headers)
		}
	}
}
