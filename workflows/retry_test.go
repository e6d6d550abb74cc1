package workflows_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// downModel is a model server that refuses the first down calls, then
// answers as next does.
type downModel struct {
	next llm.Provider
	mu   sync.Mutex
	down int
}

func (m *downModel) Name() string { return m.next.Name() }

func (m *downModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.mu.Lock()
	refuse := m.down > 0
	m.down--
	m.mu.Unlock()
	if refuse {
		return agent.ModelReply{}, &llm.Error{Class: llm.ClassNetwork, Message: `Post "http://127.0.0.1:9/v1/chat/completions": dial tcp 127.0.0.1:9: connect: connection refused`}
	}
	return m.next.Complete(ctx, req)
}

// TestRetriesShown: while the model server refuses the first model call's
// attempts, the state names the step, the attempt due (of 10), the last
// error in plain words and when it is due, the current details say so, and
// the stream carries step.retrying events; once the server answers, the
// run completes (3 model calls, 1 ticket) and the retry is gone from the
// state.
func TestRetriesShown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.acts.Exec.Model = &downModel{next: h.acts.Exec.Model, down: 3}
	var seen []workflows.Retry
	// The attempts fail at about 0 s, 1 s and 3 s of workflow time (the
	// backoff from 1 s, doubling); look between them.
	for _, at := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		h.at(at, func() {
			if rt := h.state(t).Retry; rt != nil {
				seen = append(seen, *rt)
			}
		})
	}
	var events *poll
	h.at(50*time.Second, func() { events = h.poll("events", streams.PollInput{Topics: []string{progress.TopicEvents}}) })
	h.at(time.Minute, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep}) })
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") {
		t.Fatalf("answer %q", r.Answer)
	}
	if len(seen) == 0 {
		t.Fatal("the state never showed the retry")
	}
	first := seen[0]
	if first.Step != "llm/1" || first.Attempt != 2 || first.MaxAttempts != 10 || !strings.Contains(first.LastError, "NetworkError: ") ||
		!strings.Contains(first.LastError, "connection refused") || first.NextAt.IsZero() {
		t.Errorf("retry in the state: %+v; want llm/1, attempt 2 of 10 due, the refused connection", first)
	}
	if s := first.String(); !strings.Contains(s, "llm/1: attempt 1 of 10 failed: NetworkError: ") || !strings.Contains(s, "attempt 2 is due at ") {
		t.Errorf("retry line %q", s)
	}
	if last := seen[len(seen)-1]; last.Attempt < 3 {
		t.Errorf("the last retry seen is attempt %d; want a later one", last.Attempt)
	}
	if st := h.state(t); st.Retry != nil {
		t.Errorf("the completed run still shows a retry: %+v", st.Retry)
	}
	if n := h.modelCalls(); n != 3+3 {
		t.Errorf("model activity attempts %d, want 6 (3 refused, then 3 answered)", n)
	}
	if n := h.ticketCount(t); n != 1 {
		t.Errorf("tickets %d, want 1", n)
	}
	if events == nil || !events.done || events.err != nil {
		t.Fatalf("the events poll: %+v", events)
	}
	var retrying []progress.Event
	for _, u := range updates(t, events.res.Items) {
		if u.Event != nil && u.Event.Type == progress.EventStepRetrying {
			retrying = append(retrying, *u.Event)
		}
	}
	// Three failed attempts and two later attempts started (the fourth's
	// start notice may come before or after the third's: both are shown).
	if len(retrying) < 3 || retrying[0].Step != "llm/1" || retrying[0].Attempt != 2 || !strings.Contains(retrying[0].Reason, "connection refused") {
		t.Errorf("step.retrying events: %+v; want the refused attempts of llm/1", retrying)
	}
}

// TestFailureSaysWhatHappened: a model server that refuses every attempt
// fails the run after the 10 attempts, with a reason that says so, for
// how long, the last error without the sdk's wrapping, and what to do.
func TestFailureSaysWhatHappened(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.acts.Exec.Model = &downModel{next: h.acts.Exec.Model, down: 1000}
	h.run()
	err := h.env.GetWorkflowError()
	if err == nil {
		t.Fatal("the run did not fail")
	}
	msg := err.Error()
	t.Logf("failure: %s", msg)
	for _, want := range []string{"llm/1: the model call failed after 10 attempts over ", "NetworkError: ", "connection refused", "The model server did not answer: start it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "retryable: true") {
		t.Errorf("failure %q shows the sdk's retryable flag", msg)
	}
	if st := h.state(t); st.Status != agent.StatusFailed || !strings.Contains(st.Reason, "after 10 attempts") {
		t.Errorf("state %s %q", st.Status, st.Reason)
	}
	if n := h.modelCalls(); n != 10 {
		t.Errorf("model activity attempts %d, want 10", n)
	}
}

// TestForgedRetryNoticeRejected: retry notices that are not the running
// step's (none runs while the run waits for approval), or not notices at
// all, are rejected like any bad input and change nothing shown.
func TestForgedRetryNoticeRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(30*time.Second, func() {
		h.env.SignalWorkflow(activities.RetrySignal, activities.RetryNotice{Step: "llm/1", Attempt: 3, Failed: true, Error: "forged"})
		h.env.SignalWorkflow(activities.RetrySignal, map[string]any{"step": "llm/1", "attempt": "many"})
	})
	h.at(time.Minute, func() {
		st := h.state(t)
		if st.Retry != nil || st.Status != agent.StatusAwaitingApproval {
			t.Errorf("state after forged notices: %s, retry %+v", st.Status, st.Retry)
		}
		if len(st.Rejected) != 2 || st.Rejected[0].Signal != activities.RetrySignal || !strings.Contains(st.Rejected[0].Reason, "no step runs") ||
			!strings.Contains(st.Rejected[1].Reason, "not a retry notice") {
			t.Errorf("rejected %+v; want both notices, with why", st.Rejected)
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d tickets", r.Answer, h.ticketCount(t))
	}
}

// TestLateRetryStartDropped: the notice of a later attempt's start, sent
// as it began, that arrives after the step completed is neither shown nor
// listed among the rejected inputs; a forged failure notice of the same
// step still is.
func TestLateRetryStartDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(30*time.Second, func() {
		h.env.SignalWorkflow(activities.RetrySignal, activities.RetryNotice{Step: "llm/1", Attempt: 3})
		h.env.SignalWorkflow(activities.RetrySignal, activities.RetryNotice{Step: "llm/1", Attempt: 3, Failed: true, Error: "forged"})
	})
	h.at(time.Minute, func() {
		st := h.state(t)
		if st.Retry != nil || st.Status != agent.StatusAwaitingApproval {
			t.Errorf("state after the late notice: %s, retry %+v", st.Status, st.Retry)
		}
		if len(st.Rejected) != 1 || !strings.Contains(st.Rejected[0].Reason, "no step runs") {
			t.Errorf("rejected %+v; want only the forged failure notice", st.Rejected)
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d tickets", r.Answer, h.ticketCount(t))
	}
}
