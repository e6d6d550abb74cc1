package llm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// TestScriptedDelay: a script's delay holds each Complete, and a context
// that ends first ends the call with its error; a bad delay is refused.
func TestScriptedDelay(t *testing.T) {
	s, err := ParseScript([]byte(`{"delay":"50ms","turns":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}}
	began := time.Now()
	if _, err := NewScripted(s).Complete(t.Context(), req); err != nil || time.Since(began) < 50*time.Millisecond {
		t.Fatalf("Complete: %v after %v, want a reply after 50ms", err, time.Since(began))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := NewScripted(s).Complete(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete with a short context: %v, want its deadline", err)
	}
	if _, err := ParseScript([]byte(`{"delay":"soon","turns":[{"text":"hi"}]}`)); err == nil {
		t.Fatal("a bad delay was accepted")
	}
}

// TestScriptedTurnDelay: a turn's delay holds that turn's call only.
func TestScriptedTurnDelay(t *testing.T) {
	s, err := ParseScript([]byte(`{"turns":[{"tool_calls":[{"name":"lookup"}]},{"delay":"200ms","text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := NewScripted(s)
	first := agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}}
	began := time.Now()
	if _, err := p.Complete(t.Context(), first); err != nil || time.Since(began) >= 200*time.Millisecond {
		t.Fatalf("turn 1: %v after %v, want a reply at once", err, time.Since(began))
	}
	second := agent.ModelRequest{Messages: append(first.Messages, agent.Message{Role: agent.RoleAssistant}, agent.Message{Role: agent.RoleTool, Content: "r"})}
	began = time.Now()
	if _, err := p.Complete(t.Context(), second); err != nil || time.Since(began) < 200*time.Millisecond {
		t.Fatalf("turn 2: %v after %v, want a reply after 200ms", err, time.Since(began))
	}
	if _, err := ParseScript([]byte(`{"turns":[{"delay":"-1s","text":"hi"}]}`)); err == nil {
		t.Fatal("a bad turn delay was accepted")
	}
}

// TestScriptedStreamDelay: Stream spreads the delay over its pieces, and a
// context that ends between them ends the call with its error and no
// reply, after the pieces delivered so far.
func TestScriptedStreamDelay(t *testing.T) {
	t.Parallel()
	s, err := ParseScript([]byte(`{"delay":"1s","turns":[{"text":"one two three four five six"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Content: "x"}}}
	var times []time.Duration
	began := time.Now()
	got, err := NewScripted(s).Stream(t.Context(), req, func(string) { times = append(times, time.Since(began)) })
	if err != nil || got.Message.Content != "one two three four five six" {
		t.Fatalf("Stream: %q, %v", got.Message.Content, err)
	}
	if len(times) != 2 || times[0] < 500*time.Millisecond || times[1] < time.Second {
		t.Fatalf("pieces at %v, want two, at 500ms and 1s", times)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 750*time.Millisecond)
	defer cancel()
	var pieces []string
	got, err = NewScripted(s).Stream(ctx, req, func(p string) { pieces = append(pieces, p) })
	if !errors.Is(err, context.DeadlineExceeded) || got.Message.Content != "" {
		t.Fatalf("Stream with a short context: %+v, %v; want its deadline and no reply", got, err)
	}
	if len(pieces) != 1 || pieces[0] != "one two three " {
		t.Fatalf("pieces %q, want the first only", pieces)
	}
}
