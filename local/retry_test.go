package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
)

// failing makes the steps it names fail, before they run, as often as it
// says (-1: always), with err.
type failing struct {
	inner agent.Executor
	mu    sync.Mutex
	fails map[string]int
	err   error
}

func (f *failing) Execute(ctx context.Context, s agent.Step) (json.RawMessage, error) {
	f.mu.Lock()
	n := f.fails[s.Name]
	if n > 0 {
		f.fails[s.Name]--
	}
	f.mu.Unlock()
	if n != 0 {
		return nil, f.err
	}
	return f.inner.Execute(ctx, s)
}

// quickRetry is the engines' policy with attempts attempts and a 1 ms
// first wait.
func quickRetry(attempts int) execute.Retry {
	r := execute.StepRetry
	r.MaxAttempts, r.Interval = attempts, time.Millisecond
	return r
}

var refused = &llm.Error{Class: llm.ClassNetwork, Message: `Post "http://127.0.0.1:9/v1/chat/completions": dial tcp 127.0.0.1:9: connect: connection refused`}

// notes collects what Run tells OnRetry.
func notes(j *local.Engine) func() []string {
	var mu sync.Mutex
	var out []string
	j.OnRetry = func(r local.Retrying) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, r.String())
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), out...)
	}
}

// TestRunRetriesTransientSteps: a model call that fails twice with a
// refused connection and a read that fails once are tried again, each
// retry told as one line; the run goes on to its approval, each step
// recorded once, and nothing says it stopped.
func TestRunRetriesTransientSteps(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.j.Retry = quickRetry(5)
	told := notes(f.j)
	ex := &failing{inner: f.exec, fails: map[string]int{"llm/1": 2, hand.LookupStep: 1}, err: refused}
	o, err := f.j.Drive(t.Context(), "retry", agent.UserMessages(prompt), ex)
	if err != nil || o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("run: %+v, %v; want AwaitingApproval", o, err)
	}
	want := []string{
		"llm/1: attempt 1 of 5 failed: NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions); next attempt in 1ms",
		"llm/1: attempt 2 of 5 failed: NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions); next attempt in 2ms",
		"tool/1/0/lookup: attempt 1 of 5 failed: NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions); next attempt in 1ms",
	}
	if got := told(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("retries told:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n, m := f.exec.count("llm/1"), f.exec.count(hand.LookupStep); n != 1 || m != 1 {
		t.Fatalf("calls that reached the executor: llm/1 %d, lookup %d; want 1 each", n, m)
	}
	wantRecs := []string{"run.started", "step.completed llm/1 model", "step.completed tool/1/0/lookup read", "step.completed llm/2 model"}
	if got := testenv.Describe(f.records(t, "retry")); strings.Join(got, "|") != strings.Join(wantRecs, "|") {
		t.Fatalf("records %q, want %q", got, wantRecs)
	}
	info, err := f.j.Show("retry")
	if err != nil || info.Stopped != nil {
		t.Fatalf("show: %+v, %v; want no stop", info.Stopped, err)
	}
}

// TestRunStopsAfterAttempts: a model call refused on every attempt stops
// the run after the policy's attempts: Run returns a *StoppedError, the
// journal records why (run.stopped), Show says so while the run is
// Running, and a later Run starts the step's attempts afresh and goes on,
// after which Show no longer says it stopped.
func TestRunStopsAfterAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.j.Retry = quickRetry(3)
	told := notes(f.j)
	ex := &failing{inner: f.exec, fails: map[string]int{"llm/1": -1}, err: refused}
	_, err := f.j.Drive(t.Context(), "stop", agent.UserMessages(prompt), ex)
	var stopped *local.StoppedError
	if !errors.As(err, &stopped) || !errors.Is(err, refused) {
		t.Fatalf("run: %v (%T), want a *StoppedError wrapping the last error", err, err)
	}
	const why = "llm/1: NetworkError: connection refused (http://127.0.0.1:9/v1/chat/completions)"
	if s := stopped.Stop; s.Step != "llm/1" || s.Attempts != 3 || s.Over <= 0 || s.Over > 10*time.Second || s.Step+": "+s.Error != why {
		t.Fatalf("stop %+v, want llm/1 after 3 attempts with %q", s, why)
	}
	if !strings.HasPrefix(err.Error(), "run stop stopped after 3 attempts over ") || !strings.HasSuffix(err.Error(), ": "+why) {
		t.Fatalf("error text %q", err)
	}
	if n := len(told()); n != 2 {
		t.Fatalf("retries told: %d, want 2 (after attempts 1 and 2)", n)
	}
	recs := f.records(t, "stop")
	if got := testenv.Describe(recs); strings.Join(got, "|") != "run.started|run.stopped" {
		t.Fatalf("records %q, want run.started, run.stopped", got)
	}
	if r := recs[1]; r.Stopped == nil || *r.Stopped != stopped.Stop || r.At.IsZero() {
		t.Fatalf("run.stopped record %+v, want %+v with its time", r, stopped.Stop)
	}
	info, err := f.j.Show("stop")
	if err != nil || info.Status != agent.StatusRunning || info.Stopped == nil || *info.Stopped != stopped.Stop {
		t.Fatalf("show: %s %+v, %v; want Running, stopped %+v", info.Status, info.Stopped, err, stopped.Stop)
	}
	if w, err := f.j.Waiting(); err != nil || len(w) != 1 || w[0].RunID != "stop" || w[0].Stopped == nil {
		t.Fatalf("waiting: %+v, %v; want the stopped run", w, err)
	}

	// The server is back: the resumed run makes the call and goes on.
	ex.mu.Lock()
	ex.fails["llm/1"] = 2 // two more refusals: the attempts start afresh
	ex.mu.Unlock()
	o, err := f.j.Drive(t.Context(), "stop", agent.UserMessages(prompt), ex)
	if err != nil || o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("resumed run: %+v, %v; want AwaitingApproval", o, err)
	}
	if n := len(told()); n != 4 {
		t.Fatalf("retries told: %d, want 4", n)
	}
	if info, err := f.j.Show("stop"); err != nil || info.Stopped != nil || info.Status != agent.StatusAwaitingApproval {
		t.Fatalf("show after the resume: %s %+v, %v; want AwaitingApproval and no stop", info.Status, info.Stopped, err)
	}
	if w, err := f.j.Waiting(); err != nil || len(w) != 1 || w[0].Stopped != nil || w[0].Status != agent.StatusAwaitingApproval {
		t.Fatalf("waiting after the resume: %+v, %v; want the run, awaiting approval", w, err)
	}
}

// TestRunDoesNotRetryPermanentFailures: a rejected key stops the run after
// one attempt, recorded; a write that fails is never tried again and
// records no stop (its guard settles it when the run resumes).
func TestRunDoesNotRetryPermanentFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.j.Retry = quickRetry(5)
	told := notes(f.j)
	auth := &llm.Error{Class: llm.ClassAuth, StatusCode: 401, Message: "Incorrect API key provided"}
	ex := &failing{inner: f.exec, fails: map[string]int{"llm/1": 1}, err: auth}
	_, err := f.j.Drive(t.Context(), "auth", agent.UserMessages(prompt), ex)
	var stopped *local.StoppedError
	if !errors.As(err, &stopped) || stopped.Stop.Attempts != 1 || stopped.Stop.Error != "Authentication (HTTP 401): Incorrect API key provided" {
		t.Fatalf("run: %v, want stopped after 1 attempt with the provider's words", err)
	}
	if n := len(told()); n != 0 {
		t.Fatalf("retries told: %q, want none", told())
	}

	// A write: create_ticket fails after it took effect.
	f.exec.crashAfter = ticketStep
	if o := f.run(t, "write"); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("run: %+v", o)
	}
	f.signal(t, "write", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	_, err = f.j.Drive(t.Context(), "write", agent.UserMessages(prompt), f.exec)
	if err == nil || errors.As(err, &stopped) {
		t.Fatalf("the failed write: %v, want its error, not a stop", err)
	}
	if n := f.exec.count(ticketStep); n != 1 {
		t.Fatalf("create_ticket calls: %d, want 1", n)
	}
	for _, r := range f.records(t, "write") {
		if r.Type == journal.RunStopped {
			t.Fatalf("a failed write recorded %+v", r)
		}
	}
	if o := f.run(t, "write"); o.Status != agent.StatusIndeterminate {
		t.Fatalf("resumed: %+v, want Indeterminate", o)
	}
}

// TestRunRetryWaitEnds: a cancel recorded while the driver waits for the
// next attempt ends the run as Cancelled at once; the driver's own context
// ending ends Run with its error and records where it stopped: run.stopped,
// interrupted, naming the step, its failed attempt and the error.
func TestRunRetryWaitEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	slow := execute.StepRetry
	slow.Interval = time.Hour
	f.j.Retry = slow
	ex := &failing{inner: f.exec, fails: map[string]int{"llm/1": -1}, err: refused}

	f.j.OnRetry = func(r local.Retrying) {
		if r.RunID == "cancel" {
			go func() { _ = f.j.Cancel(context.Background(), "cancel") }()
		}
	}
	began := time.Now()
	o, err := f.j.Drive(t.Context(), "cancel", agent.UserMessages(prompt), ex)
	if err != nil || o.Status != agent.StatusCancelled || time.Since(began) > 10*time.Second {
		t.Fatalf("run: %+v, %v after %v; want Cancelled at once", o, err, time.Since(began))
	}

	ctx, cancel := context.WithCancel(t.Context())
	f.j.OnRetry = func(local.Retrying) { cancel() }
	began = time.Now()
	_, err = f.j.Drive(ctx, "interrupt", agent.UserMessages(prompt), ex)
	if !errors.Is(err, context.Canceled) || time.Since(began) > 10*time.Second {
		t.Fatalf("run: %v after %v; want context.Canceled at once", err, time.Since(began))
	}
	recs := f.records(t, "interrupt")
	if got := testenv.Describe(recs); strings.Join(got, "|") != "run.started|run.stopped" {
		t.Fatalf("records %q, want run.started, run.stopped", got)
	}
	if s := recs[1].Stopped; s == nil || !s.Interrupted || s.Step != "llm/1" || s.Attempts != 1 || !strings.Contains(s.String(), "interrupted after 1 failed attempt over ") {
		t.Fatalf("run.stopped %+v (%v): want interrupted at llm/1 after 1 failed attempt", s, s)
	}
	info, err := f.j.Show("interrupt")
	if err != nil || info.Status != agent.StatusRunning || info.Stopped == nil || !info.Stopped.Interrupted {
		t.Fatalf("show: %+v, %v; want Running with the interrupted stop", info, err)
	}
}
