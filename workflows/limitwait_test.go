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
	"github.com/agentrun/agentrun/ratelimit"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// busyPool is a model behind a shared rate limit whose next slot is wait
// away at its first call: that call waits for it (the Limiter tells the
// activity, which tells the run), and the model, before it answers, reads
// the run's state once the wait, or a retry, shows there (within
// showWithin: a notice reaches the run in milliseconds).
type busyPool struct {
	next  llm.Provider
	wait  time.Duration
	state func() workflows.State
	mu    sync.Mutex
	calls int
	seen  *workflows.LimitWait
	retry *workflows.Retry // what the state showed instead, if it did
}

// showWithin bounds how long busyPool looks for the wait in the state;
// the test's environment waits longer (SetTestTimeout), so that a wait
// that never shows fails the test on that, not on the environment's
// timeout.
const showWithin = 3 * time.Second

func (m *busyPool) Name() string { return m.next.Name() }

func (m *busyPool) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.mu.Lock()
	m.calls++
	first := m.calls == 1
	m.mu.Unlock()
	if first {
		store := &ratelimit.MemStore{}
		lim := ratelimit.Limit{Pool: "openai", RequestsPerMinute: 60}
		_ = store.Update(ctx, lim.Pool, func(s *ratelimit.State) error { s.Request = time.Now().Add(m.wait); return nil })
		if _, err := (&ratelimit.Limiter{Store: store}).Take(ctx, lim, 100, time.Minute); err != nil {
			return agent.ModelReply{}, err
		}
		for deadline := time.Now().Add(showWithin); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st := m.state(); st.LimitWait != nil || st.Retry != nil {
				m.mu.Lock()
				m.seen, m.retry = st.LimitWait, st.Retry
				m.mu.Unlock()
				break
			}
		}
	}
	return m.next.Complete(ctx, req)
}

// TestLimitWaitShown: a model step that waits for its rate limit shows the
// wait in the state (which step, which limit, the slot), in words ("waiting
// for the openai rate limit, next slot in 2 s") and on the stream as a
// step.waiting event; it is no retry (no attempt failed, attempt 1), and
// once the step completes the wait is gone. The run completes with its 3
// model calls and 1 ticket.
func TestLimitWaitShown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env.SetTestTimeout(30 * time.Second) // the model's 2 s wait and its look at the state
	m := &busyPool{next: h.acts.Exec.Model, wait: 2 * time.Second, state: func() workflows.State { return h.state(t) }}
	h.acts.Exec.Model = m
	var events *poll
	h.at(50*time.Second, func() {
		if st := h.state(t); st.LimitWait != nil || st.Retry != nil {
			t.Errorf("after the step completed: wait %+v, retry %+v; want neither", st.LimitWait, st.Retry)
		}
		events = h.poll("events", streams.PollInput{Topics: []string{progress.TopicEvents}})
	})
	h.at(time.Minute, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep}) })
	began := time.Now()
	h.run()
	w := m.seen
	if m.retry != nil || w == nil {
		t.Fatalf("while llm/1 waited for its slot the state showed wait %+v, retry %+v; want the wait, no retry: a wait is no failed attempt", w, m.retry)
	}
	if n := h.modelCalls(); n != 3 {
		t.Errorf("model activity attempts %d, want 3: the wait is no failed attempt", n)
	}
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d tickets", r.Answer, h.ticketCount(t))
	}
	if w.Step != "llm/1" || w.Attempt != 1 || w.Pool != "openai" || w.Paused || w.Until.Sub(began) < time.Second || w.Until.Sub(began) > 4*time.Second {
		t.Errorf("wait in the state: %+v; want llm/1, attempt 1, openai, a slot about 2 s after the start", w)
	}
	if s := w.At(w.Until.Add(-2 * time.Second)); s != "llm/1: waiting for the openai rate limit, next slot in 2 s" {
		t.Errorf("wait line %q", s)
	}
	if s := w.String(); !strings.HasPrefix(s, "llm/1: waiting for the openai rate limit, next slot at ") {
		t.Errorf("wait line for the details %q", s)
	}
	if events == nil || !events.done || events.err != nil {
		t.Fatalf("the events poll: %+v", events)
	}
	var waiting []progress.Event
	for _, u := range updates(t, events.res.Items) {
		if u.Event != nil && u.Event.Type == progress.EventStepWaiting {
			waiting = append(waiting, *u.Event)
		}
		if u.Event != nil && u.Event.Type == progress.EventStepRetrying {
			t.Errorf("a step.retrying event for a wait: %+v", *u.Event)
		}
	}
	if len(waiting) != 1 || waiting[0].Step != "llm/1" || waiting[0].Attempt != 1 ||
		!strings.HasPrefix(waiting[0].Reason, "llm/1: waiting for the openai rate limit, next slot in ") {
		t.Errorf("step.waiting events: %+v; want one of llm/1", waiting)
	}
}

// forgingModel sends forged wait notices for the step it runs (llm/1)
// at its first call and waits until the run has refused them all.
type forgingModel struct {
	next llm.Provider
	h    *harness
	t    *testing.T
	once sync.Once
	saw  []workflows.Rejected
}

func (m *forgingModel) Name() string { return m.next.Name() }

func (m *forgingModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.once.Do(func() {
		now := time.Now()
		for _, n := range []activities.RetryNotice{
			{Step: "llm/1", Attempt: 1, Limit: "open ai!", NextAt: now.Add(time.Second)},
			{Step: "llm/1", Attempt: 1, Limit: "openai", Failed: true, Error: "forged", NextAt: now.Add(time.Second)},
			{Step: "llm/1", Attempt: 1, Limit: "openai", NextAt: now.Add(48 * time.Hour)},
			{Step: "llm/1", Attempt: 2, Paused: true},
		} {
			m.h.env.SignalWorkflow(activities.RetrySignal, n)
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st := m.h.stateFromActivity(m.t); len(st.Rejected) == 4 {
				m.saw = st.Rejected
				if st.LimitWait != nil {
					m.t.Errorf("a forged notice shows a wait: %+v", st.LimitWait)
				}
				break
			}
		}
	})
	return m.next.Complete(ctx, req)
}

// TestForgedWaitNoticeRejected: wait notices that name another step than
// the one running, a pool that is no pool name, a failure, a slot days
// away, or a pause without a limit are rejected like any bad input and
// show nothing.
func TestForgedWaitNoticeRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	m := &forgingModel{next: h.acts.Exec.Model, h: h, t: t}
	h.acts.Exec.Model = m
	h.at(30*time.Second, func() {
		h.env.SignalWorkflow(activities.RetrySignal, activities.RetryNotice{Step: "llm/3", Attempt: 1, Limit: "openai", NextAt: h.env.Now().Add(time.Second)})
	})
	h.at(time.Minute, func() {
		st := h.state(t)
		if st.LimitWait != nil || st.Status != agent.StatusAwaitingApproval {
			t.Errorf("state after forged notices: %s, wait %+v", st.Status, st.LimitWait)
		}
		if n := len(st.Rejected); n != 5 || !strings.Contains(st.Rejected[4].Reason, "no step runs") {
			t.Errorf("rejected %+v; want the 4 notices of the running step and the one when none ran", st.Rejected)
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d tickets", r.Answer, h.ticketCount(t))
	}
	wants := []string{"a wait notice of limit \"open ai!\"", "a wait is no failure", "not within 24h0m0s of the run's clock", "paused but names no limit"}
	if len(m.saw) != len(wants) {
		t.Fatalf("rejected while llm/1 ran: %+v; want %d", m.saw, len(wants))
	}
	for i, want := range wants {
		if !strings.Contains(m.saw[i].Reason, want) {
			t.Errorf("rejection %d: %q, want it to say %q", i, m.saw[i].Reason, want)
		}
	}
}
