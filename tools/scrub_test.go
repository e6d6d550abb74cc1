package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/secret"
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
