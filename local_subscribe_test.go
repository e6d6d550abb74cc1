package agentrun_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/progress"
)

// collect reads seq to its end: its items, and the first error.
func collect(seq iter.Seq2[agentrun.Update, error]) ([]agentrun.Update, error) {
	var out []agentrun.Update
	for u, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, u)
	}
	return out, nil
}

// completedSteps are the steps of the step.completed events of us.
func completedSteps(us []agentrun.Update) []string {
	var steps []string
	for _, u := range us {
		if u.Event != nil && u.Event.Type == progress.EventStepCompleted {
			steps = append(steps, u.Event.Step)
		}
	}
	return steps
}

// statuses are the statuses of the status events of us.
func statuses(us []agentrun.Update) []string {
	var out []string
	for _, u := range us {
		if u.Event != nil && u.Event.Type == progress.EventStatus {
			out = append(out, string(u.Event.Status)+strings.Join(u.Event.Pending, ","))
		}
	}
	return out
}

// TestLocalSubscribe follows the large refund live: it waits for approval
// while a subscriber follows it, another goroutine drives it (Wait), a
// person approves, and the subscription ends with the run, Completed.
// Subscribing again from an offset goes on after that item.
func TestLocalSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	l, payments, _, _ := refundDesk(t, dir)
	run, err := l.Start(ctx, agentrun.StartOptions{ID: "large-1", Prompt: "Order A-1001 arrived broken; please refund it."})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		items []agentrun.Update
		err   error
	}
	subscribed := make(chan result, 1)
	seen := make(chan agentrun.Update, 100)
	go func() {
		var items []agentrun.Update
		for u, err := range l.Run("large-1").Subscribe(ctx, agentrun.SubscribeOptions{}) {
			if err != nil {
				subscribed <- result{items, err}
				return
			}
			items = append(items, u)
			seen <- u
		}
		subscribed <- result{items, nil}
	}()
	// The subscriber reads the wait for approval before anyone decides.
	for u := range seen {
		if u.Event.Type == progress.EventStatus && u.Event.Status == agentrun.StatusAwaitingApproval {
			break
		}
	}
	select {
	case r := <-subscribed:
		t.Fatalf("the subscription ended while the run waits: %v, %v", r.items, r.err)
	default:
	}
	waited := make(chan error, 1)
	go func() {
		res, err := run.Wait(ctx)
		if err == nil && res.Status != agentrun.StatusCompleted {
			err = errors.New("Wait: run is " + string(res.Status))
		}
		waited <- err
	}()
	store, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if h, err := store.Holder(ctx, "large-1"); err == nil && h != nil && h.Follows {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("Wait returned before it followed the run: %v", err)
		case <-ctx.Done():
			t.Fatalf("Wait never followed the run: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	var op agentrun.Operator = l.Run("large-1")
	if _, err := op.Approve(ctx, "tool/2/0/refund", ""); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	r := <-subscribed
	if r.err != nil {
		t.Fatalf("subscription: %v after %v", r.err, r.items)
	}
	for _, u := range r.items {
		t.Log(u)
	}
	wantSteps := []string{"llm/1", "tool/1/0/order", "llm/2", "tool/2/0/refund", "llm/3"}
	if got := completedSteps(r.items); !slices.Equal(got, wantSteps) {
		t.Errorf("completed steps %v; want %v", got, wantSteps)
	}
	wantStatus := []string{"Running", "AwaitingApprovaltool/2/0/refund", "Running", "Completed"}
	if got := statuses(r.items); !slices.Equal(got, wantStatus) {
		t.Errorf("statuses %v; want %v", got, wantStatus)
	}
	last := r.items[len(r.items)-1]
	if last.Event.Status != agentrun.StatusCompleted || !strings.Contains(last.Event.Preview, "RF-0001") {
		t.Errorf("last item %v (preview %q); want Completed with RF-0001", last, last.Event.Preview)
	}
	if n := payments.Refunds(); n != 1 {
		t.Errorf("%d refunds; want 1", n)
	}
	// Each step starts before it completes, offsets never go back.
	started := map[string]bool{}
	for i, u := range r.items {
		if i > 0 && u.Offset < r.items[i-1].Offset {
			t.Errorf("item %d %v: offset before the previous one's", i, u)
		}
		switch u.Event.Type {
		case progress.EventStepStarted:
			started[u.Event.Step] = true
		case progress.EventStepCompleted:
			if !started[u.Event.Step] {
				t.Errorf("%v completed before it started", u)
			}
		}
	}

	// From the item after llm/2's completion: the run's items with later
	// offsets, the same as live, and the run ended: no wait.
	i := slices.IndexFunc(r.items, func(u agentrun.Update) bool {
		return u.Event.Type == progress.EventStepCompleted && u.Event.Step == "llm/2"
	})
	from := r.items[i].Offset + 1
	again, err := collect(l.Run("large-1").Subscribe(ctx, agentrun.SubscribeOptions{From: from}))
	if err != nil {
		t.Fatal(err)
	}
	var want []agentrun.Update
	for _, u := range r.items {
		if u.Offset >= from {
			want = append(want, u)
		}
	}
	if got := completedSteps(again); !slices.Equal(got, []string{"tool/2/0/refund", "llm/3"}) {
		t.Errorf("from %d: completed steps %v; want tool/2/0/refund, llm/3", from, got)
	}
	if len(again) != len(want) || len(again) == 0 || again[0].String() != want[0].String() || again[len(again)-1].String() != want[len(want)-1].String() {
		t.Errorf("from %d: %v; want %v", from, again, want)
	}
	if got := statuses(again); !slices.Equal(got, []string{"Running", "Completed"}) {
		t.Errorf("from %d: statuses %v; want Running (approved), Completed", from, got)
	}
}

// TestLocalSubscribeBad: an unknown run, a bad id and a negative From are
// each one error.
func TestLocalSubscribeBad(t *testing.T) {
	ctx := t.Context()
	l, _, _, _ := refundDesk(t, t.TempDir())
	for _, c := range []struct {
		id   string
		from int64
		want string
	}{
		{"nobody", 0, "run nobody not found"},
		{"../x", 0, "run id"},
		{"nobody", -1, "From -1 is negative"},
	} {
		var items []agentrun.Update
		var errs []error
		for u, err := range l.Run(c.id).Subscribe(ctx, agentrun.SubscribeOptions{From: c.from}) {
			if err != nil {
				errs = append(errs, err)
			} else {
				items = append(items, u)
			}
		}
		if len(items) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("Subscribe(%q, From %d): %v, %v; want one error with %q", c.id, c.from, items, errs, c.want)
		}
		if c.want == "run nobody not found" && !errors.Is(errs[0], agentrun.ErrRunNotFound) {
			t.Errorf("unknown run: %v; want ErrRunNotFound", errs[0])
		}
	}
}
