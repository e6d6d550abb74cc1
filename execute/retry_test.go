package execute_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/llm"
)

// TestStepRetry: the engines' policy waits 1s, 2s, 4s ... at most 1m
// between the 10 attempts of a step; a rate limit's Retry-After is waited
// for instead; a failure trying again cannot mend, and any failure of a
// write, is not tried again.
func TestStepRetry(t *testing.T) {
	t.Parallel()
	model := agent.Step{Name: "llm/1", Kind: agent.KindModel}
	read := agent.Step{Name: hand.LookupStep, Kind: agent.KindRead}
	write := agent.Step{Name: hand.TicketStep, Kind: agent.KindWrite}
	idempotent := agent.Step{Name: "tool/2/0/put", Kind: agent.KindWrite, Idempotent: true}
	network := &llm.Error{Class: llm.ClassNetwork, Message: "connection refused"}
	r := execute.StepRetry
	if r.Attempts() != 10 {
		t.Fatalf("attempts %d, want 10", r.Attempts())
	}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 32 * time.Second, 7: time.Minute, 9: time.Minute} {
		if got, again := r.Next(model, n, network); !again || got != want {
			t.Errorf("after attempt %d: %v %v, want %v", n, got, again, want)
		}
	}
	if _, again := r.Next(model, 10, network); again {
		t.Error("an 11th attempt")
	}
	limited := &llm.Error{Class: llm.ClassRateLimit, StatusCode: 429, RetryAfter: 7 * time.Second, Message: "slow down"}
	if got, again := r.Next(model, 1, limited); !again || got != 7*time.Second {
		t.Errorf("rate limit: %v %v, want its Retry-After 7s", got, again)
	}
	for _, tc := range []struct {
		step agent.Step
		err  error
		want bool
	}{
		{model, network, true},
		{model, &llm.Error{Class: llm.ClassServer, StatusCode: 503}, true},
		{model, &llm.Error{Class: llm.ClassTimeout}, true},
		{model, limited, true},
		{model, errors.New("unclassified"), true}, // a NetworkError, as on Temporal
		{model, &llm.Error{Class: llm.ClassAuth, StatusCode: 401}, false},
		{model, &llm.Error{Class: llm.ClassBadRequest, StatusCode: 400}, false},
		{model, &llm.Error{Class: llm.ClassNotFound, StatusCode: 404}, false},
		{model, &llm.Error{Class: llm.ClassContextLength, StatusCode: 400}, false},
		{model, &execute.ContentError{Step: "llm/1", Key: "sha256:x", Err: content.ErrNotFound}, false},
		{model, fmt.Errorf("llm/1: %w", context.Canceled), false},
		{read, errors.New("mcp server went away"), true},
		{read, &execute.ContentError{Step: hand.LookupStep, Key: "sha256:x", Err: content.ErrDamaged}, false},
		{write, network, false},
		{idempotent, network, false},
	} {
		if got := execute.Transient(tc.step, tc.err); got != tc.want {
			t.Errorf("Transient(%s, %v) = %v, want %v", tc.step.Name, tc.err, got, tc.want)
		}
		if _, again := r.Next(tc.step, 1, tc.err); again != tc.want {
			t.Errorf("Next(%s, 1, %v) again = %v, want %v", tc.step.Name, tc.err, again, tc.want)
		}
	}
	short := execute.Retry{MaxAttempts: 3, Interval: 10 * time.Millisecond, Backoff: 2, MaxInterval: time.Minute}
	if got, _ := short.Next(model, 2, network); got != 20*time.Millisecond {
		t.Errorf("short policy after attempt 2: %v, want 20ms", got)
	}
	if _, again := short.Next(model, 3, network); again {
		t.Error("short policy: a 4th attempt")
	}
}

// TestDescribe: a failure in plain words on one line: a refused
// connection as its cause and address.
func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&llm.Error{Class: llm.ClassNetwork, Message: `Post "http://127.0.0.1:9/v1/chat/completions": dial tcp 127.0.0.1:9: connect: connection refused`},
			"NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions)"},
		{&llm.Error{Class: llm.ClassAuth, StatusCode: 401, Message: "Incorrect API key\nprovided"}, "Authentication (HTTP 401): Incorrect API key provided"},
		{fmt.Errorf("step llm/1: %w", &llm.Error{Class: llm.ClassServer, StatusCode: 503, Message: "overloaded"}), "ServerError (HTTP 503): overloaded"},
		{errors.New("mcp: server exited"), "mcp: server exited"},
	} {
		if got := execute.Describe(tc.err); got != tc.want {
			t.Errorf("Describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
