package execute_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testhook"
)

// ticketTool is a write tool that counts its calls.
type ticketTool struct{ calls atomic.Int32 }

func (*ticketTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "create_ticket", Kind: agent.KindWrite, Description: "files a ticket"}
}

func (t *ticketTool) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	t.calls.Add(1)
	return agent.ToolResult{Content: "ticket 1"}, nil
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHold: the test-only hold points come in the context (package
// internal/testhook), never through the Executor. A write of the named
// tool or step holds before or after its effect until its context ends
// (failing with the context's cause, its result never returned), or, with
// HoldFor, goes on by itself; any other step, and every step of a context
// without hooks, runs at once.
func TestHold(t *testing.T) {
	t.Parallel()
	const stepName = "tool/5/0/create_ticket"
	write := agent.Step{Name: stepName, Kind: agent.KindWrite, Call: &agent.ToolCall{ID: "c1", Name: "create_ticket", Args: json.RawMessage(`{}`)}}
	read := write
	read.Kind = agent.KindRead
	other := write
	other.Name = "tool/7/0/create_ticket"
	killed := errors.New("killed")
	for _, c := range []struct {
		name  string
		hooks testhook.Hooks
		step  agent.Step
		line  string // the hold's line; "" runs at once
		calls int32  // the tool's calls once it returned
		held  bool   // waits until its context ends, then fails with killed
	}{
		{"no hooks", testhook.Hooks{}, write, "", 1, false},
		{"before, by tool", testhook.Hooks{HoldBefore: "create_ticket"}, write, "hold before create_ticket: waiting to be killed", 0, true},
		{"before, by step", testhook.Hooks{HoldBefore: stepName}, write, "hold before create_ticket: waiting to be killed", 0, true},
		{"before, another step", testhook.Hooks{HoldBefore: stepName}, other, "", 1, false},
		{"before, a read", testhook.Hooks{HoldBefore: "create_ticket"}, read, "", 1, false},
		{"after, by tool", testhook.Hooks{HoldAfter: "create_ticket"}, write, "hold after create_ticket: waiting to be killed", 1, true},
		{"before, for a while", testhook.Hooks{HoldBefore: "create_ticket", HoldFor: 10 * time.Millisecond}, write, "hold before create_ticket: released", 1, false},
		{"after, for a while", testhook.Hooks{HoldAfter: "create_ticket", HoldFor: 10 * time.Millisecond}, write, "hold after create_ticket: released", 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tool := &ticketTool{}
			var log syncBuffer
			e := &execute.Executor{Tools: newSet(t, tool), Content: content.NewMemStore(), Logger: slog.New(slog.NewTextHandler(&log, nil))}
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			type answer struct {
				res json.RawMessage
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := e.Execute(testhook.With(ctx, c.hooks), c.step)
				done <- answer{res, err}
			}()
			var a answer
			if c.held {
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(log.String(), c.line) {
					if time.Now().After(deadline) {
						t.Fatalf("no %q logged within 10s; log: %s", c.line, log.String())
					}
					time.Sleep(5 * time.Millisecond)
				}
				select {
				case a = <-done:
					t.Fatalf("returned while held: %s, %v", a.res, a.err)
				case <-time.After(20 * time.Millisecond):
				}
				cancel(killed)
				a = <-done
				if !errors.Is(a.err, killed) || a.res != nil {
					t.Errorf("held step: %s, %v; want no result and the context's cause", a.res, a.err)
				}
			} else {
				a = <-done
				if a.err != nil || !strings.Contains(string(a.res), "ticket 1") {
					t.Errorf("step: %s, %v; want the ticket", a.res, a.err)
				}
				if c.line == "" && log.String() != "" {
					t.Errorf("logged %q; want nothing", log.String())
				}
				if c.line != "" && (!strings.Contains(log.String(), c.line) || !strings.Contains(log.String(), "holding for 10ms")) {
					t.Errorf("log %q; want %q after holding for 10ms", log.String(), c.line)
				}
			}
			if n := tool.calls.Load(); n != c.calls {
				t.Errorf("tool called %d times; want %d", n, c.calls)
			}
		})
	}
}
