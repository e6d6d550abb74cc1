package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/secret"
)

// Tool is one executable tool.
type Tool interface {
	Spec() agent.ToolSpec
	// Call runs the tool. An error means the call failed to run (the engine
	// may retry a read); a failure the model should see is a ToolResult
	// with IsError.
	Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error)
}

// DefaultTimeout bounds one call of a tool whose configuration sets no
// timeout.
const DefaultTimeout = 2 * time.Minute

// ErrTimeout is matched (errors.Is) by the error of a call that outlasted
// its tool's timeout. Whether the tool did anything is unknown.
var ErrTimeout = errors.New("tool call timed out")

// TimeoutError is the error of a call that outlasted its tool's timeout.
type TimeoutError struct {
	Tool    string
	Timeout time.Duration
	// Err is what the tool returned once its context was cancelled, or nil
	// if it had not returned yet.
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("tool %q did not finish within its timeout of %s", e.Tool, e.Timeout)
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns the tool's own error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Set is a fixed collection of tools, in the order they were added, each
// with its timeout.
type Set struct {
	tools    []Tool
	timeouts []time.Duration
	// agents are the agent tools the set was opened with (agents.go).
	agents map[string]Agent

	mu      sync.Mutex
	closers []io.Closer // the MCP clients behind the tools; nil after Close
}

// NewSet returns a set of the given tools; a name given twice is an error.
// Each tool's timeout is DefaultTimeout unless it was made by Apply with a
// timeout or declares one (a Timeout() time.Duration method returning more
// than 0).
func NewSet(ts ...Tool) (*Set, error) {
	s := &Set{}
	for _, t := range ts {
		if _, ok := s.Lookup(t.Spec().Name); ok {
			return nil, fmt.Errorf("tool %q is defined twice", t.Spec().Name)
		}
		d := DefaultTimeout
		if o, ok := t.(*overridden); ok && o.timeout > 0 {
			d = o.timeout
		} else if o, ok := t.(interface{ Timeout() time.Duration }); ok && o.Timeout() > 0 {
			d = o.Timeout() // a tool that declares its own (agentrun.Tool)
		}
		s.tools = append(s.tools, t)
		s.timeouts = append(s.timeouts, d)
	}
	return s, nil
}

func (s *Set) index(name string) int {
	for i, t := range s.tools {
		if t.Spec().Name == name {
			return i
		}
	}
	return -1
}

// Lookup returns the tool with the given name.
func (s *Set) Lookup(name string) (Tool, bool) {
	if i := s.index(name); i >= 0 {
		return s.tools[i], true
	}
	return nil, false
}

// Specs returns the specs of all tools, in order.
func (s *Set) Specs() []agent.ToolSpec {
	specs := make([]agent.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		specs[i] = t.Spec()
	}
	return specs
}

// Timeout returns how long Call lets the named tool run: its configured
// timeout, or DefaultTimeout (also for a name the set does not hold, whose
// call fails at once). An engine sets its own deadline for a tool step above
// this one, so that the tool's timeout, not the engine's, decides.
func (s *Set) Timeout(name string) time.Duration {
	if i := s.index(name); i >= 0 {
		return s.timeouts[i]
	}
	return DefaultTimeout
}

// Call runs the named tool under its timeout. A call that outlasts it
// returns a *TimeoutError (errors.Is(err, ErrTimeout)) as soon as the
// timeout fires, even if the tool ignores its context; a result the tool
// delivered in time, or together with its context ending, is returned as
// is. If ctx ends first, Call returns the tool's error or ctx's. A result's
// content and an error's message are scrubbed of the worker's secrets
// (package plumbing/secret).
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) (agent.ToolResult, error) {
	i := s.index(name)
	if i < 0 {
		return agent.ToolResult{}, fmt.Errorf("unknown tool %q", name)
	}
	if err := Live(ctx); err != nil {
		return agent.ToolResult{}, err // the attempt may no longer act: the tool is not called
	}
	t, d := s.tools[i], s.timeouts[i]
	timedOut := &TimeoutError{Tool: name, Timeout: d}
	cctx, cancel := context.WithTimeoutCause(ctx, d, timedOut)
	defer cancel()
	type answer struct {
		r   agent.ToolResult
		err error
	}
	ch := make(chan answer, 1) // the tool's goroutine never blocks on it
	go func() {
		r, err := t.Call(cctx, args)
		ch <- answer{r, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-cctx.Done():
		select {
		case a = <-ch: // it answered as its context ended
		default:
			if context.Cause(cctx) == timedOut {
				return agent.ToolResult{}, timedOut
			}
			return agent.ToolResult{}, context.Cause(ctx)
		}
	}
	if a.err != nil && context.Cause(cctx) == timedOut {
		// A new value: the tool may still hold timedOut as its context's cause.
		return agent.ToolResult{}, &TimeoutError{Tool: name, Timeout: d, Err: secret.Err(a.err)}
	}
	// What a tool says goes to the model, the run's history and logs: never
	// with the worker's secrets in it.
	a.r.Content = secret.Scrub(a.r.Content)
	return a.r, secret.Err(a.err)
}

// Close releases what the tools hold: it ends the sessions with the MCP
// servers that Open connected and stops the stdio servers it started. Calls
// of their tools after Close fail (mcp.ErrClosed). Close is idempotent; a
// set made by NewSet holds nothing.
func (s *Set) Close() error {
	s.mu.Lock()
	cs := s.closers
	s.closers = nil
	s.mu.Unlock()
	return closeAll(cs)
}

// closeAll closes cs concurrently: a server that ignores the end of its
// stdin takes seconds to stop.
func closeAll(cs []io.Closer) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Live returns nil while ctx may still act: it is not done and its
// deadline, if any, has not passed on this host's clock. A write tool calls
// it right before its effect (the demo's create_ticket does, once it holds
// the ticket store's lock): an attempt whose deadline passed, or whose
// heartbeat Temporal refused, must not act, because a later attempt may
// already be settling the write. It reads the clock itself, because a
// context's own timer may not have fired yet in a process that was just
// resumed after a freeze.
func Live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
