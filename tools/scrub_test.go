package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/plumbing/secret"
	"github.com/agentrun/agentrun/tools/mcp"
)

// leaky is a tool that repeats a secret in its result or its error.
type leaky struct{ say string }

func (l leaky) Spec() agent.ToolSpec { return agent.ToolSpec{Name: "leaky", Kind: agent.KindRead} }

func (l leaky) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	if strings.HasPrefix(l.say, "error: ") {
		return agent.ToolResult{}, leakErr(l.say)
	}
	return agent.ToolResult{Content: l.say}, nil
}

func leakErr(s string) error { return errors.Join(errors.New(s), fs.ErrPermission) }

// TestSetCallScrubsSecrets: what a tool says (result or error) reaches the
// model and the run's history without the worker's secret values; the
// error still matches what it wrapped.
func TestSetCallScrubsSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-scrub-test-0123456789"
	secret.Add(key)
	for _, tc := range []struct{ say, want string }{
		{"the key is " + key + ".", "the key is [redacted]."},
		{`{"OPENAI_API_KEY":"` + key + `"}`, `{"OPENAI_API_KEY":"[redacted]"}`},
		{"nothing to hide", "nothing to hide"},
	} {
		s, err := NewSet(leaky{tc.say})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Call(t.Context(), "leaky", nil)
		if err != nil || res.Content != tc.want {
			t.Errorf("Call = %q, %v; want %q", res.Content, err, tc.want)
		}
	}
	s, _ := NewSet(leaky{"error: auth " + key + " refused"})
	_, err := s.Call(t.Context(), "leaky", nil)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "auth [redacted] refused") || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Call error %v, want it scrubbed and still ErrPermission", err)
	}
}

// TestServerSeesOnlyWhatTheFileGives: a Set opened from a tools file whose
// server gets a token from the file (env) runs the npm everything server
// with that token and none of the worker's keys; what the server reports
// (get-env) comes back with the token scrubbed.
func TestServerSeesOnlyWhatTheFileGives(t *testing.T) {
	bin := mcptest.Bin(t, mcptest.Everything)
	t.Setenv("OPENAI_API_KEY", "sk-openai-set-test-0001") // not parallel: the process's environment
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-set-test-0002")
	const token = "ghp-from-the-file-0003"
	s, err := Open(t.Context(), Config{Servers: []mcp.Server{{Name: "everything", Command: bin, Env: map[string]string{"GITHUB_TOKEN": token}}}}, DemoConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := s.Call(t.Context(), "get-env", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]string
	if err := json.Unmarshal([]byte(res.Content), &vars); err != nil {
		t.Fatalf("get-env: %v: %s", err, res.Content)
	}
	if _, ok := vars["OPENAI_API_KEY"]; ok || strings.Contains(res.Content, "sk-") {
		t.Errorf("the server sees the worker's keys: %s", res.Content)
	}
	if _, ok := vars["ANTHROPIC_API_KEY"]; ok {
		t.Errorf("the server sees ANTHROPIC_API_KEY: %s", res.Content)
	}
	if vars["GITHUB_TOKEN"] != secret.Redacted || strings.Contains(res.Content, token) {
		t.Errorf("GITHUB_TOKEN = %q, want the file's token, scrubbed to %s", vars["GITHUB_TOKEN"], secret.Redacted)
	}
}
