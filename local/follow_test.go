package local_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// following starts a following Run of the fixture's run id in the
// background; waits receives each wait OnWait is told of, done the result.
type following struct {
	waits chan agent.Outcome
	done  chan followResult
}

type followResult struct {
	o   agent.Outcome
	err error
}

func follow(ctx context.Context, j *local.Engine, id string, input []agent.Message, exec agent.Executor) *following {
	f := &following{waits: make(chan agent.Outcome, 16), done: make(chan followResult, 1)}
	j.Follow = true
	j.OnWait = func(o agent.Outcome) { f.waits <- o }
	go func() {
		o, err := j.Drive(ctx, id, input, exec)
		f.done <- followResult{o, err}
	}()
	return f
}

func (f *following) wait(t *testing.T, want agent.Status) agent.Outcome {
	t.Helper()
	select {
	case o := <-f.waits:
		if o.Status != want {
			t.Fatalf("the driver waits %s (%+v), want %s", o.Status, o, want)
		}
		return o
	case r := <-f.done:
		t.Fatalf("the driver returned %+v, %v; want it to wait %s", r.o, r.err, want)
	case <-time.After(10 * time.Second):
		t.Fatalf("the driver did not wait %s within 10s", want)
	}
	return agent.Outcome{}
}

func (f *following) result(t *testing.T) followResult {
	t.Helper()
	select {
	case r := <-f.done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the driver did not return within 10s")
	}
	return followResult{}
}

// operatorOf is another process's journal over the fixture's folder.
func operatorOf(t *testing.T, f *fixture) *local.Engine {
	t.Helper()
	store, err := journal.NewFileStore(f.j.Store.(*journal.FileStore).Dir())
	if err != nil {
		t.Fatal(err)
	}
	return &local.Engine{Store: store, Loop: f.j.Loop}
}

// TestFollowApproval: a following driver of the hand example waits
// AwaitingApproval holding the run's lock (a second driver is busy and
// told it follows), wakes when another process records the approval, and
// completes: 3 model calls, 1 ticket, within WakeBound of the approval.
func TestFollowApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := follow(t.Context(), f.j, "hand", agent.UserMessages(prompt), f.exec)
	o := fl.wait(t, agent.StatusAwaitingApproval)
	if len(o.Pending) != 1 || o.Pending[0].Marker != ticketStep {
		t.Fatalf("waits on %+v, want %s", o.Pending, ticketStep)
	}
	op := operatorOf(t, f)
	_, err := op.Drive(t.Context(), "hand", agent.UserMessages(prompt), f.exec)
	var busy *journal.BusyError
	if !errors.As(err, &busy) || !busy.Follows || !strings.Contains(err.Error(), "follows it") {
		t.Fatalf("a second driver: %v, want a *BusyError saying the driver follows", err)
	}
	if h, err := op.Store.(journal.Holders).Holder(t.Context(), "hand"); err != nil || h == nil || !h.Follows || h.PID != os.Getpid() {
		t.Fatalf("Holder while following: %+v, %v; want this process, following", h, err)
	}
	at := time.Now()
	if err := op.Signal(t.Context(), "hand", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep}); err != nil {
		t.Fatal(err)
	}
	r := fl.result(t)
	if r.err != nil || r.o.Status != agent.StatusCompleted {
		t.Fatalf("after the approval: %+v, %v; want Completed", r.o, r.err)
	}
	if took := time.Since(at); took > journal.WakeBound+2*time.Second {
		t.Fatalf("the driver completed %v after the approval; a wake-up is at most %v late", took, journal.WakeBound)
	}
	if n := f.exec.calls["llm/1"] + f.exec.calls["llm/2"] + f.exec.calls["llm/3"]; n != 3 {
		t.Fatalf("%d model calls, want 3 (%v)", n, f.exec.calls)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	if h, err := op.Store.(journal.Holders).Holder(t.Context(), "hand"); err != nil || h != nil {
		t.Fatalf("Holder once the driver returned: %+v, %v; want none", h, err)
	}
}

// TestFollowCancelAndStop: a cancel recorded while a following driver
// waits ends its Run as Cancelled; a following driver whose context ends
// while it waits returns the wait's outcome in a *FollowStoppedError and
// leaves the run as it was.
func TestFollowCancelAndStop(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fl := follow(t.Context(), f.j, "cancelled", agent.UserMessages(prompt), f.exec)
	fl.wait(t, agent.StatusAwaitingApproval)
	if err := operatorOf(t, f).Cancel(t.Context(), "cancelled"); err != nil {
		t.Fatal(err)
	}
	if r := fl.result(t); r.err != nil || r.o.Status != agent.StatusCancelled {
		t.Fatalf("after the cancel: %+v, %v; want Cancelled", r.o, r.err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	fl = follow(ctx, f.j, "stopped", agent.UserMessages(prompt), f.exec)
	fl.wait(t, agent.StatusAwaitingApproval)
	n := len(f.records(t, "stopped"))
	cancel()
	r := fl.result(t)
	var stopped *local.FollowStoppedError
	if !errors.As(r.err, &stopped) || !errors.Is(r.err, context.Canceled) || r.o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("stopped while waiting: %+v, %v; want AwaitingApproval and a *FollowStoppedError", r.o, r.err)
	}
	if got := len(f.records(t, "stopped")); got != n {
		t.Fatalf("stopping wrote %d records", got-n)
	}
}

// TestFollowSession: a session run waits Idle after each answer; a
// message wakes it and it answers again (llm/2); with no message it
// completes once its idle time passed, with its last answer.
func TestFollowSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	script, err := llm.ParseScript([]byte(`{"turns":[{"text":"answer 1: {{last_user_message}}"},{"text":"answer 2: {{last_user_message}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tools.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	exec := &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: content.NewMemStore()}
	j := &local.Engine{Store: store, Loop: agent.Loop{Tools: set.Specs()}, Session: 2 * time.Second}
	fl := follow(t.Context(), j, "session", agent.UserMessages("hello"), exec)
	if o := fl.wait(t, agent.StatusIdle); o.Answer != "answer 1: hello" {
		t.Fatalf("first answer %q", o.Answer)
	}
	op := &local.Engine{Store: store, Loop: j.Loop}
	if err := op.Signal(t.Context(), "session", operator.Signal{Name: operator.SignalMessage, Content: "and staging"}); err != nil {
		t.Fatal(err)
	}
	if o := fl.wait(t, agent.StatusIdle); o.Answer != "answer 2: and staging" {
		t.Fatalf("second answer %q", o.Answer)
	}
	if info, err := op.Show("session"); err != nil || info.Status != agent.StatusIdle || info.Turns != 2 {
		t.Fatalf("show while idle: %+v, %v", info, err)
	}
	r := fl.result(t) // the idle time passes
	if r.err != nil || r.o.Status != agent.StatusCompleted || r.o.Answer != "answer 2: and staging" {
		t.Fatalf("after the idle time: %+v, %v; want Completed with the last answer", r.o, r.err)
	}
	if err := op.Signal(t.Context(), "session", operator.Signal{Name: operator.SignalMessage, Content: "late"}); !errors.Is(err, operator.ErrInvalid) {
		t.Fatalf("a message to a completed session: %v, want refused", err)
	}
}

// TestFollowApprovalExpires: a following driver whose pending call has an
// approval timeout wakes when it passes, with no record to wake it: the
// call is denied as expired, the model is told, and the run completes
// with no ticket.
func TestFollowApprovalExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	demo := tools.Demo(tools.DemoConfig{Tickets: f.tickets})
	demo[1] = tools.Apply(demo[1], tools.Override{ApprovalTimeout: 500 * time.Millisecond})
	set, err := tools.NewSet(demo...)
	if err != nil {
		t.Fatal(err)
	}
	f.j.Loop = agent.Loop{Tools: set.Specs()}
	fl := follow(t.Context(), f.j, "expires", agent.UserMessages(prompt), f.exec)
	fl.wait(t, agent.StatusAwaitingApproval)
	r := fl.result(t)
	if r.err != nil || r.o.Status != agent.StatusCompleted || !strings.Contains(r.o.Answer, "approval expired after 500ms") {
		t.Fatalf("after the timeout: %+v, %v; want Completed telling of the expiry", r.o, r.err)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
}
