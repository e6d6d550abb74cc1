package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// fakeTool answers through its call function.
type fakeTool struct {
	name string
	call func(ctx context.Context) (agent.ToolResult, error)
}

func (f fakeTool) Spec() agent.ToolSpec { return agent.ToolSpec{Name: f.name, Kind: agent.KindWrite} }

func (f fakeTool) Call(ctx context.Context, _ json.RawMessage) (agent.ToolResult, error) {
	return f.call(ctx)
}

func TestSetTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stubborn := fakeTool{"stubborn", func(context.Context) (agent.ToolResult, error) {
		<-release // ignores its context
		return agent.ToolResult{Content: "too late"}, nil
	}}
	polite := fakeTool{"polite", func(ctx context.Context) (agent.ToolResult, error) {
		<-ctx.Done()
		return agent.ToolResult{}, ctx.Err()
	}}
	quick := fakeTool{"quick", func(context.Context) (agent.ToolResult, error) {
		return agent.ToolResult{Content: "done"}, nil
	}}
	s, err := NewSet(
		Apply(stubborn, Override{Timeout: 50 * time.Millisecond}),
		Apply(polite, Override{Timeout: 40 * time.Millisecond}),
		quick,
	)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"stubborn": 50 * time.Millisecond, "polite": 40 * time.Millisecond, "quick": DefaultTimeout, "unknown": DefaultTimeout} {
		if got := s.Timeout(name); got != want {
			t.Errorf("Timeout(%s) = %s, want %s", name, got, want)
		}
	}

	for _, tc := range []struct {
		tool, want string
		wantErr    error // what the TimeoutError may wrap
	}{
		{"stubborn", `tool "stubborn" did not finish within its timeout of 50ms`, nil},
		{"polite", `tool "polite" did not finish within its timeout of 40ms`, context.DeadlineExceeded},
	} {
		start := time.Now()
		_, err := s.Call(t.Context(), tc.tool, nil)
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("%s: Call returned after %s", tc.tool, elapsed)
		}
		var te *TimeoutError
		if !errors.Is(err, ErrTimeout) || !errors.As(err, &te) || err.Error() != tc.want {
			t.Errorf("%s: %v, want a TimeoutError %q", tc.tool, err, tc.want)
			continue
		}
		// Err is the tool's error if it answered as the timeout fired.
		if te.Tool != tc.tool || te.Err != nil && !errors.Is(te.Err, tc.wantErr) {
			t.Errorf("%s: %+v", tc.tool, te)
		}
	}

	if r, err := s.Call(t.Context(), "quick", nil); err != nil || r.Content != "done" {
		t.Errorf("quick: %+v, %v", r, err)
	}
	// The caller's context ending first is not the tool's timeout.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Call(ctx, "polite", nil); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("polite with a cancelled context: %v, want Canceled and not ErrTimeout", err)
	}
	if _, err := s.Call(t.Context(), "unknown", nil); err == nil || err.Error() != `unknown tool "unknown"` {
		t.Errorf("unknown: %v", err)
	}
}

func TestDemoToolTimeout(t *testing.T) {
	t.Parallel()
	tickets := filepath.Join(t.TempDir(), "tickets.jsonl")
	s, err := Open(t.Context(), Config{Tools: map[string]Override{"create_ticket": {Timeout: 100 * time.Millisecond}}},
		DemoConfig{Tickets: tickets, Delay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(t.Context(), "create_ticket", json.RawMessage(`{"title":"vpn"}`))
	if !errors.Is(err, ErrTimeout) || err.Error() != `tool "create_ticket" did not finish within its timeout of 100ms` {
		t.Fatalf("create_ticket: %v", err)
	}
	// The ticket was written before the delay: the outcome of a timed-out
	// write is unknown, which is why the engine makes it Indeterminate.
	ts, err := ReadTickets(tickets)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tickets: %v, %v; want one", ts, err)
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	yes := true
	lookup := Demo(DemoConfig{})[0]
	got := Apply(Apply(lookup, Override{Timeout: time.Second, Approval: agent.ApprovalAlways}), Override{Kind: agent.KindWrite, Idempotent: &yes})
	want := agent.ToolSpec{
		Name:        "lookup",
		Description: "Look up the company policy on a topic.",
		Schema:      lookup.Spec().Schema,
		Kind:        agent.KindWrite,
		Idempotent:  true,
		Approval:    agent.ApprovalAlways,
	}
	if !reflect.DeepEqual(got.Spec(), want) {
		t.Fatalf("spec = %+v, want %+v", got.Spec(), want)
	}
	s, err := NewSet(got)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Timeout("lookup"); d != time.Second {
		t.Fatalf("timeout = %s, want the first Apply's 1s", d)
	}
	r, err := s.Call(t.Context(), "lookup", json.RawMessage(`{"topic":"vpn"}`))
	if err != nil || r.Content != "VPN policy: every employee may use the VPN; request a certificate from IT." {
		t.Fatalf("lookup: %+v, %v", r, err)
	}
}
