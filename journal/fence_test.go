package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// fenceClock is a settable clock for the fence tests.
type fenceClock struct{ now time.Time }

func (c *fenceClock) Now() time.Time { return c.now }

var fenceStart = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

// fenceWrite is create_ticket as a guarded write, settled as settle says.
func fenceWrite(settle *agent.Settle) agent.Step {
	return agent.Step{Name: "RUNKEY/tool/2/0/create_ticket", Kind: agent.KindWrite,
		Call: &agent.ToolCall{Name: "create_ticket", Args: json.RawMessage(`{"title":"x"}`)}, Settle: settle}
}

var (
	settleProbe = &agent.Settle{Probe: &agent.Probe{Tool: "find_ticket"}}
	settleKey   = &agent.Settle{KeyArg: "request_id", Key: "k-1"}
)

// startedAndFrozen records a first attempt's start (timeout 10 s) whose
// tool never returns: the process froze inside it.
func startedAndFrozen(t *testing.T, j *journal.Guard, step agent.Step) {
	t.Helper()
	_, err := j.RunAttempt(t.Context(), "run-1", step, fence.Attempt{Generation: 1, Number: 1, Worker: "1@a"}, 10*time.Second,
		func(ctx context.Context) (json.RawMessage, error) {
			d, ok := ctx.Deadline()
			if !ok || !d.Equal(fenceStart.Add(10*time.Second)) {
				t.Errorf("the tool's context deadline is %v (%v), want the attempt's deadline %v", d, ok, fenceStart.Add(10*time.Second))
			}
			return nil, errors.New("frozen")
		})
	if err == nil || err.Error() != "frozen" {
		t.Fatalf("first attempt: %v", err)
	}
}

// TestFence: a later attempt that finds an earlier attempt's start before
// that attempt's deadline plus the grace neither probes nor runs the write
// (except under its key); after it, the settle rules apply unchanged.
func TestFence(t *testing.T) {
	ticket := agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-1"})
	for _, tc := range []struct {
		name   string
		settle *agent.Settle
		at     time.Duration // after the first attempt's start
		// want: "fenced" (FenceError), "indeterminate" (with the holder),
		// "ran" (the tool ran), "probed" (the probe was asked)
		want string
	}{
		{"probe before the deadline", settleProbe, 6 * time.Second, "fenced"},
		{"probe within the grace", settleProbe, 10*time.Second + fence.Grace - time.Millisecond, "fenced"},
		{"probe after the grace", settleProbe, 10*time.Second + fence.Grace, "probed"},
		{"nothing before the deadline", nil, 6 * time.Second, "indeterminate"},
		{"nothing after the grace", nil, 13 * time.Second, "indeterminate-free"},
		{"key before the deadline", settleKey, 6 * time.Second, "ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fenceClock{now: fenceStart}
			store := journal.NewMemStore()
			probes := 0
			j := &journal.Guard{Store: store, Now: clock.Now, Probe: func(ctx context.Context, s agent.Step) (agent.ProbeAnswer, error) {
				probes++
				return agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeNotFound}, nil
			}}
			step := fenceWrite(tc.settle)
			startedAndFrozen(t, j, step)
			before, _ := store.Load("run-1")
			clock.now = fenceStart.Add(tc.at)
			ran := 0
			res, err := j.RunAttempt(t.Context(), "run-1", step, fence.Attempt{Generation: 1, Number: 2, Worker: "2@b"}, 10*time.Second,
				func(context.Context) (json.RawMessage, error) { ran++; return ticket, nil })
			after, _ := store.Load("run-1")
			var fe *fence.Error
			var ind *journal.IndeterminateError
			switch tc.want {
			case "fenced":
				if !errors.As(err, &fe) || !fe.Until().Equal(fenceStart.Add(10*time.Second+fence.Grace)) || fe.Holder.Worker != "1@a" {
					t.Fatalf("got %v, want a FenceError naming attempt 1 until the deadline plus the grace", err)
				}
				if !strings.Contains(err.Error(), "attempt 1 (worker 1@a) may still be running until 14:00:12 UTC") {
					t.Errorf("error %q does not say who may run until when", err)
				}
				if ran != 0 || probes != 0 || len(after) != len(before) {
					t.Fatalf("ran %d, probes %d, records %d -> %d: want nothing done", ran, probes, len(before), len(after))
				}
			case "indeterminate":
				if !errors.As(err, &ind) || ind.Holder == nil || !strings.Contains(err.Error(), "may still be running until 14:00:12 UTC") {
					t.Fatalf("got %v, want Indeterminate naming the holder", err)
				}
				if ran != 0 || len(after) != len(before) {
					t.Fatalf("ran %d, records %d -> %d", ran, len(before), len(after))
				}
				// A person's retry is refused until then, on the local engine too.
				if err := operator.CheckRetry(hand.TicketStep, ind.Holder.String(), ind.Holder.Until(), clock.now); err == nil ||
					!strings.Contains(err.Error(), "attempt 1 (worker 1@a) of tool/2/0/create_ticket may still be running until 14:00:12 UTC; check again after that") {
					t.Errorf("retry while held: %v", err)
				}
			case "indeterminate-free":
				if !errors.As(err, &ind) || ind.Holder != nil {
					t.Fatalf("got %v, want Indeterminate with no holder", err)
				}
			case "probed":
				if err != nil || probes != 1 || ran != 1 || string(res) == "" {
					t.Fatalf("err %v, probes %d, ran %d: want the probe asked, then the write run", err, probes, ran)
				}
			case "ran":
				if err != nil || probes != 0 || ran != 1 {
					t.Fatalf("err %v, probes %d, ran %d: want the write run again at once under its key", err, probes, ran)
				}
				if s := agent.SettledOf(res); s == nil || s.By != agent.SettledByKey {
					t.Errorf("settled %+v, want by key", s)
				}
			}
		})
	}
}

// TestFenceRecordsTheAttempt: the start of a fenced write carries the
// attempt and its deadline; an unfenced one (timeout 0) carries none.
func TestFenceRecordsTheAttempt(t *testing.T) {
	clock := &fenceClock{now: fenceStart}
	store := journal.NewMemStore()
	j := &journal.Guard{Store: store, Now: clock.Now}
	ok := func(context.Context) (json.RawMessage, error) {
		return agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-1"}), nil
	}
	if _, err := j.RunAttempt(t.Context(), "run-1", fenceWrite(nil), fence.Attempt{Generation: 1, Number: 3, Worker: "7@h"}, 30*time.Second, ok); err != nil {
		t.Fatal(err)
	}
	recs, _ := store.Load("run-1")
	if len(recs) != 2 || recs[0].Attempt == nil || recs[0].Attempt.Number != 3 || recs[0].Attempt.Worker != "7@h" || !recs[0].Attempt.Deadline.Equal(fenceStart.Add(30*time.Second)) {
		t.Fatalf("records %+v: want a start carrying attempt 3 of 7@h with deadline start+30s", recs)
	}
	step := fenceWrite(nil)
	step.Name = "RUNKEY/tool/3/0/create_ticket"
	if _, err := j.RunStep(t.Context(), "run-1", step, ok); err != nil {
		t.Fatal(err)
	}
	recs, _ = store.Load("run-1")
	if recs[2].Attempt != nil {
		t.Fatalf("an unfenced start carries %+v", recs[2].Attempt)
	}
}

// TestFenceLost: an attempt whose deadline passes, or whose step another
// attempt took, between recording its start and running the tool, does
// not run it.
func TestFenceLost(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		clock := &fenceClock{now: fenceStart}
		store := &stallingStore{Store: journal.NewMemStore()}
		j := &journal.Guard{Store: store, Now: clock.Now}
		store.afterStart = func() { clock.now = fenceStart.Add(11 * time.Second) } // frozen right after its start
		ran := false
		_, err := j.RunAttempt(t.Context(), "run-1", fenceWrite(nil), fence.Attempt{Number: 1}, 10*time.Second,
			func(context.Context) (json.RawMessage, error) { ran = true; return nil, nil })
		if !errors.Is(err, fence.ErrLost) || ran || !strings.Contains(err.Error(), "the tool did not run") {
			t.Fatalf("err %v, ran %v: want ErrFenceLost and the tool not run", err, ran)
		}
	})
	t.Run("taken", func(t *testing.T) {
		clock := &fenceClock{now: fenceStart}
		store := &stallingStore{Store: journal.NewMemStore()}
		j := &journal.Guard{Store: store, Now: clock.Now}
		other := &journal.Guard{Store: store.Store, Now: func() time.Time { return fenceStart.Add(13 * time.Second) }}
		store.afterStart = func() {
			// Another host whose clock is ahead takes the step meanwhile.
			if _, err := other.RunAttempt(t.Context(), "run-1", fenceWrite(settleKey), fence.Attempt{Number: 2}, 10*time.Second,
				func(context.Context) (json.RawMessage, error) {
					return agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-1"}), nil
				}); err != nil {
				t.Fatal(err)
			}
		}
		ran := false
		_, err := j.RunAttempt(t.Context(), "run-1", fenceWrite(settleKey), fence.Attempt{Number: 1}, 10*time.Second,
			func(context.Context) (json.RawMessage, error) { ran = true; return nil, nil })
		if !errors.Is(err, fence.ErrLost) || ran {
			t.Fatalf("err %v, ran %v: want ErrFenceLost and the tool not run", err, ran)
		}
	})
}

// TestFenceGenerations: the first attempt of a person's retry (generation
// 2) waits for the previous generation's attempt.
func TestFenceGenerations(t *testing.T) {
	clock := &fenceClock{now: fenceStart}
	j := &journal.Guard{Store: journal.NewMemStore(), Now: clock.Now}
	startedAndFrozen(t, j, fenceWrite(nil))
	clock.now = fenceStart.Add(5 * time.Second)
	gen2 := fenceWrite(nil)
	gen2.Name += "#2"
	_, err := j.RunAttempt(t.Context(), "run-1", gen2, fence.Attempt{Generation: 2, Number: 1}, 10*time.Second,
		func(context.Context) (json.RawMessage, error) { t.Fatal("ran"); return nil, nil })
	var fe *fence.Error
	if !errors.As(err, &fe) || fe.Holder.Worker != "1@a" {
		t.Fatalf("got %v, want a FenceError naming generation 1's attempt", err)
	}
	clock.now = fenceStart.Add(12 * time.Second)
	if _, err := j.RunAttempt(t.Context(), "run-1", gen2, fence.Attempt{Generation: 2, Number: 1}, 10*time.Second,
		func(context.Context) (json.RawMessage, error) {
			return agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-1"}), nil
		}); err != nil {
		t.Fatalf("after the grace: %v", err)
	}
}

// stallingStore calls afterStart once, after the first append that
// records a step.started: the moment between a write's start and its tool.
type stallingStore struct {
	journal.Store
	afterStart func()
}

func (s *stallingStore) Append(runID string, seen int, recs ...journal.Record) error {
	err := s.Store.Append(runID, seen, recs...)
	for _, r := range recs {
		if r.Type == journal.StepStarted && s.afterStart != nil && err == nil {
			f := s.afterStart
			s.afterStart = nil
			f()
		}
	}
	return err
}
