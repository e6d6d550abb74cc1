package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

const prompt = hand.Prompt

// counting wraps an executor, counts the calls of each step and can fail
// a step once after it ran (a crash after the effect, before the record).
type counting struct {
	inner agent.Executor
	mu    sync.Mutex
	calls map[string]int
	// crashAfter makes the named step run and then return an error, once.
	crashAfter string
}

func (c *counting) Execute(ctx context.Context, s agent.Step) (json.RawMessage, error) {
	c.mu.Lock()
	c.calls[s.Name]++
	crash := c.crashAfter == s.Name
	if crash {
		c.crashAfter = ""
	}
	c.mu.Unlock()
	res, err := c.inner.Execute(ctx, s)
	if crash {
		return nil, errors.New("simulated crash after the step took effect")
	}
	return res, err
}

func (c *counting) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.calls {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

type fixture struct {
	j       *local.Engine
	exec    *counting
	tickets string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	store, err := journal.NewFileStore(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "tickets.jsonl")
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: tickets})...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{
		j:       &local.Engine{Store: store, Loop: agent.Loop{Tools: set.Specs()}},
		exec:    &counting{inner: &execute.Executor{Model: llm.NewScripted(llm.HandExample()), Tools: set, Content: content.NewMemStore()}, calls: map[string]int{}},
		tickets: tickets,
	}
}

func (f *fixture) run(t *testing.T, id string) agent.Outcome {
	t.Helper()
	o, err := f.j.Drive(t.Context(), id, agent.UserMessages(prompt), f.exec)
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	return o
}

func (f *fixture) records(t *testing.T, id string) []journal.Record {
	t.Helper()
	recs, err := f.j.Store.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (f *fixture) ticketCount(t *testing.T) int {
	t.Helper()
	return testenv.TicketCount(t, f.tickets)
}

func (f *fixture) signal(t *testing.T, id string, s operator.Signal) {
	t.Helper()
	if err := f.j.Signal(t.Context(), id, s); err != nil {
		t.Fatalf("signal %+v: %v", s, err)
	}
}

const ticketStep = hand.TicketStep

func TestHandExample(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := f.run(t, "hand")
	if o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 || o.Pending[0].Marker != ticketStep || o.Pending[0].Tool != "create_ticket" {
		t.Fatalf("first run: got %+v, want AwaitingApproval on %s", o, ticketStep)
	}
	// Model and read steps record only their completion.
	want := []string{"run.started", "step.completed llm/1 model", "step.completed tool/1/0/lookup read", "step.completed llm/2 model"}
	if got := testenv.Describe(f.records(t, "hand")); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records after first run:\n got %q\nwant %q", got, want)
	}
	if n := f.exec.count("llm/"); n != 2 {
		t.Fatalf("model calls after first run: %d, want 2", n)
	}
	f.signal(t, "hand", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})

	o = f.run(t, "hand")
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
		t.Fatalf("second run: got %+v, want Completed naming TICKET-1", o)
	}
	if n := f.exec.count("llm/"); n != 3 {
		t.Fatalf("model calls after second run: %d, want 3 (exactly 1 more)", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	// The write records its start before it runs; the rest only completions.
	want = append(want, "signal", "step.started "+ticketStep+" write", "step.completed "+ticketStep+" write",
		"step.completed llm/3 model", "run.completed")
	if got := testenv.Describe(f.records(t, "hand")); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("records after second run:\n got %q\nwant %q", got, want)
	}
	info, err := f.j.Show("hand")
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []string{"llm/1 model completed 0", "tool/1/0/lookup read completed 0", "llm/2 model completed 0",
		ticketStep + " write completed 1", "llm/3 model completed 0"}
	if got := describeSteps(info.Steps); info.Records != 9 || strings.Join(got, "|") != strings.Join(wantSteps, "|") {
		t.Fatalf("show: %d records, steps\n %q\nwant 9 records, steps\n %q", info.Records, got, wantSteps)
	}
	before := len(f.records(t, "hand"))

	o = f.run(t, "hand")
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
		t.Fatalf("third run: got %+v, want the recorded answer", o)
	}
	if n := f.exec.count(""); n != 5 {
		t.Fatalf("steps executed in all: %d, want 5 (third run calls nothing)", n)
	}
	if n := len(f.records(t, "hand")); n != before {
		t.Fatalf("third run wrote %d records, want 0", n-before)
	}
}

// describeSteps renders Show's steps as "name kind state starts".
func describeSteps(steps []local.StepInfo) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = fmt.Sprintf("%s %s %s %d", s.Name, s.Kind, s.State, s.Starts)
	}
	return out
}

// toIndeterminate runs the hand example up to a create_ticket that wrote
// its ticket and crashed before recording the result.
func toIndeterminate(t *testing.T, f *fixture, id string) {
	t.Helper()
	f.run(t, id)
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	f.exec.crashAfter = ticketStep
	if _, err := f.j.Drive(t.Context(), id, agent.UserMessages(prompt), f.exec); err == nil {
		t.Fatal("the crashing run returned no error")
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets after the crash: %d, want 1", n)
	}
	for range 2 { // stays Indeterminate, however often it is resumed
		o := f.run(t, id)
		if o.Status != agent.StatusIndeterminate || o.Step != ticketStep {
			t.Fatalf("after the crash: got %+v, want Indeterminate at %s", o, ticketStep)
		}
	}
	if n := f.exec.count(ticketStep); n != 1 {
		t.Fatalf("create_ticket calls: %d, want 1", n)
	}
	info, err := f.j.Show(id)
	if err != nil || info.Status != agent.StatusIndeterminate || info.Indeterminate != ticketStep {
		t.Fatalf("show: %+v, %v; want Indeterminate at %s", info, err, ticketStep)
	}
}

func TestIndeterminateWrite(t *testing.T) {
	t.Parallel()
	t.Run("done", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		toIndeterminate(t, f, "ind-done")
		f.signal(t, "ind-done", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeDone, Result: "TICKET-1"})
		o := f.run(t, "ind-done")
		if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
			t.Fatalf("after done: %+v, want Completed naming the person's result TICKET-1", o)
		}
		if n := f.exec.count(ticketStep); n != 1 {
			t.Fatalf("create_ticket calls: %d, want 1 (done never runs the write)", n)
		}
		if n := f.ticketCount(t); n != 1 {
			t.Fatalf("tickets: %d, want 1", n)
		}
		if n := f.exec.count("llm/"); n != 3 {
			t.Fatalf("model calls: %d, want 3", n)
		}
	})
	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		toIndeterminate(t, f, "ind-retry")
		f.signal(t, "ind-retry", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeRetry})
		o := f.run(t, "ind-retry")
		if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-2") {
			t.Fatalf("after retry: %+v, want Completed naming TICKET-2", o)
		}
		if n := f.exec.count(ticketStep); n != 2 {
			t.Fatalf("create_ticket calls: %d, want 2 (retry runs it exactly once more)", n)
		}
		if n := f.ticketCount(t); n != 2 {
			t.Fatalf("tickets: %d, want 2", n)
		}
	})
	t.Run("retry that crashes again is Indeterminate again", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		toIndeterminate(t, f, "ind-twice")
		f.signal(t, "ind-twice", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeRetry})
		f.exec.crashAfter = ticketStep
		if _, err := f.j.Drive(t.Context(), "ind-twice", agent.UserMessages(prompt), f.exec); err == nil {
			t.Fatal("the crashing retry returned no error")
		}
		o := f.run(t, "ind-twice")
		if o.Status != agent.StatusIndeterminate {
			t.Fatalf("after a crashed retry: %+v, want Indeterminate", o)
		}
		if n := f.exec.count(ticketStep); n != 2 {
			t.Fatalf("create_ticket calls: %d, want 2", n)
		}
	})
}

func TestReadStepRerunsAfterCrash(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.exec.crashAfter = hand.LookupStep
	if _, err := f.j.Drive(t.Context(), "read", agent.UserMessages(prompt), f.exec); err == nil {
		t.Fatal("the crashing run returned no error")
	}
	o := f.run(t, "read")
	if o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("after the crash: %+v, want AwaitingApproval", o)
	}
	if n := f.exec.count(hand.LookupStep); n != 2 {
		t.Fatalf("lookup calls: %d, want 2 (the unrecorded read is re-run)", n)
	}
	if n := f.exec.count("llm/1"); n != 1 {
		t.Fatalf("llm/1 calls: %d, want 1 (the model call before it is not)", n)
	}
	if n := f.exec.count("llm/"); n != 2 {
		t.Fatalf("model calls: %d, want 2", n)
	}
}

func TestInputMismatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "same")
	n := len(f.records(t, "same"))
	o := f.run(t, "same")
	if o.Status != agent.StatusAwaitingApproval || f.exec.count("llm/") != 2 {
		t.Fatalf("resume with the same input: %+v after %d model calls, want AwaitingApproval after 2", o, f.exec.count("llm/"))
	}
	_, err := f.j.Drive(t.Context(), "same", agent.UserMessages("another prompt"), f.exec)
	if !errors.Is(err, operator.ErrInputMismatch) {
		t.Fatalf("other input: err %v, want ErrInputMismatch", err)
	}
	if got := len(f.records(t, "same")); got != n {
		t.Fatalf("refused input wrote %d records", got-n)
	}
	err = f.j.Signal(t.Context(), "nosuch", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	if !errors.Is(err, operator.ErrUnknownRun) {
		t.Fatalf("signal of an unknown run: %v, want ErrUnknownRun", err)
	}
	if _, err := f.j.Show("nosuch"); !errors.Is(err, operator.ErrUnknownRun) {
		t.Fatalf("show of an unknown run: %v, want ErrUnknownRun", err)
	}
	if recs := f.records(t, "nosuch"); len(recs) != 0 {
		t.Fatalf("a refused signal created %d records", len(recs))
	}
}

func TestSignalValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "v")
	n := len(f.records(t, "v"))
	bad := []struct {
		name string
		sig  operator.Signal
		want string
	}{
		{"unknown marker", operator.Signal{Name: operator.SignalApprove, Marker: "tool/9/0/create_ticket"}, "is not awaiting approval; pending: tool/2/0/create_ticket"},
		{"malformed marker", operator.Signal{Name: operator.SignalApprove, Marker: "ticket"}, "is not a tool step"},
		{"deny without reason", operator.Signal{Name: operator.SignalDeny, Marker: ticketStep}, "reason is empty"},
		{"reconcile a step that is not indeterminate", operator.Signal{Name: operator.SignalReconcile, Step: hand.LookupStep, Outcome: operator.OutcomeDone, Result: "x"}, "is not indeterminate"},
		{"done without result", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeDone}, "needs the result"},
		{"unknown outcome", operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: "maybe"}, `want "done" or "retry"`},
		{"unknown signal", operator.Signal{Name: "approv", Marker: ticketStep}, "want approve, deny, reconcile, budget or message"},
		{"negative budget", operator.Signal{Name: operator.SignalBudget, MaxTurns: -1}, "MaxTurns -1 is negative"},
		{"empty budget", operator.Signal{Name: operator.SignalBudget}, `it sets no limit; want {"MaxTurns": 40, "MaxTokens": 200000, "MaxCost": 5}`},
		{"budget not above the calls made", operator.Signal{Name: operator.SignalBudget, MaxTurns: 2}, "MaxTurns 2 is not above the 2 model calls the run made; want at least 3"},
	}
	for _, c := range bad {
		err := f.j.Signal(t.Context(), "v", c.sig)
		if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line wrapping operator.ErrInvalid containing %q", c.name, err, c.want)
		}
	}
	f.signal(t, "v", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
	err := f.j.Signal(t.Context(), "v", operator.Signal{Name: operator.SignalDeny, Marker: ticketStep, Reason: "changed my mind"})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "already decided") {
		t.Errorf("deny after approve: %v, want already decided", err)
	}
	if got := len(f.records(t, "v")); got != n+1 {
		t.Fatalf("records: %d, want %d (only the one valid approval written)", got, n+1)
	}
}

func TestDenyTellsTheModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.run(t, "deny")
	f.signal(t, "deny", operator.Signal{Name: operator.SignalDeny, Marker: ticketStep, Reason: "not during the freeze"})
	o := f.run(t, "deny")
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "denied by operator: not during the freeze") ||
		!strings.Contains(o.Answer, "Nothing was filed") || strings.Contains(o.Answer, "filed as") {
		t.Fatalf("after deny: %+v, want an answer quoting the denial and saying nothing was filed", o)
	}
	if n := f.ticketCount(t); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
	if n := f.exec.count(ticketStep); n != 0 {
		t.Fatalf("create_ticket calls: %d, want 0", n)
	}
}

// oldFormat rewrites records as the journal wrote them before model and
// read steps went without a start record: a step.started (with the kind)
// before every step.completed, whose kind is absent.
func oldFormat(recs []journal.Record) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Type == journal.StepCompleted && r.Kind != agent.KindWrite {
			out = append(out, journal.Record{Type: journal.StepStarted, Step: r.Step, Kind: r.Kind, Idempotent: r.Idempotent})
		}
		if r.Type == journal.StepCompleted {
			r.Kind, r.Idempotent = "", false
			// The old code kept no conversation by reference.
			if reply, err := agent.DecodeModelReply(r.Result); err == nil && reply.Conversation != nil {
				reply.Conversation = nil
				r.Result, _ = agent.EncodeModelReply(reply)
			}
		}
		out = append(out, r)
	}
	return out
}

// TestOldJournalResumes: journals written by the old code, with a start
// record for every step and model replies without a conversation
// reference, load, show and resume without calling a recorded
// step again; a read that started and never completed runs again.
func TestOldJournalResumes(t *testing.T) {
	t.Parallel()
	src := newFixture(t)
	src.run(t, "hand")
	old := oldFormat(src.records(t, "hand"))
	want := []string{"run.started", "step.started llm/1 model", "step.completed llm/1", "step.started tool/1/0/lookup read",
		"step.completed tool/1/0/lookup", "step.started llm/2 model", "step.completed llm/2"}
	if got := testenv.Describe(old); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("old journal:\n got %q\nwant %q", got, want)
	}

	t.Run("awaiting approval", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		if err := f.j.Store.Append("old", 0, old...); err != nil {
			t.Fatal(err)
		}
		info, err := f.j.Show("old")
		if err != nil {
			t.Fatal(err)
		}
		wantSteps := []string{"llm/1 model completed 1", "tool/1/0/lookup read completed 1", "llm/2 model completed 1"}
		if got := describeSteps(info.Steps); info.Status != agent.StatusAwaitingApproval || strings.Join(got, "|") != strings.Join(wantSteps, "|") {
			t.Fatalf("show: %s, steps %q; want AwaitingApproval, %q", info.Status, got, wantSteps)
		}
		if o := f.run(t, "old"); o.Status != agent.StatusAwaitingApproval || f.exec.count("") != 0 {
			t.Fatalf("resume: %+v after %d calls; want AwaitingApproval after none", o, f.exec.count(""))
		}
		f.signal(t, "old", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
		o := f.run(t, "old")
		if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
			t.Fatalf("after approval: %+v, want Completed naming TICKET-1", o)
		}
		if f.exec.count("llm/") != 1 || f.exec.count(ticketStep) != 1 || f.exec.count("tool/1/") != 0 {
			t.Fatalf("calls: %d model, %d create_ticket, %d lookup; want 1, 1, 0", f.exec.count("llm/"), f.exec.count(ticketStep), f.exec.count("tool/1/"))
		}
		want := append(slices.Clone(want), "signal", "step.started "+ticketStep+" write", "step.completed "+ticketStep+" write",
			"step.completed llm/3 model", "run.completed")
		if got := testenv.Describe(f.records(t, "old")); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("records:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("inside a read", func(t *testing.T) {
		t.Parallel()
		// The old code crashed inside lookup: its start is recorded, no more.
		f := newFixture(t)
		if err := f.j.Store.Append("old", 0, old[:4]...); err != nil {
			t.Fatal(err)
		}
		if o := f.run(t, "old"); o.Status != agent.StatusAwaitingApproval {
			t.Fatalf("resume: %+v, want AwaitingApproval", o)
		}
		if f.exec.count(hand.LookupStep) != 1 || f.exec.count("llm/1") != 0 || f.exec.count("llm/") != 1 {
			t.Fatalf("calls: %d lookup, %d llm/1, %d model; want 1, 0, 1", f.exec.count(hand.LookupStep), f.exec.count("llm/1"), f.exec.count("llm/"))
		}
		want := append(slices.Clone(want[:4]), "step.completed tool/1/0/lookup read", "step.completed llm/2 model")
		if got := testenv.Describe(f.records(t, "old")); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("records:\n got %q\nwant %q", got, want)
		}
		info, err := f.j.Show("old")
		if err != nil {
			t.Fatal(err)
		}
		wantSteps := []string{"llm/1 model completed 1", "tool/1/0/lookup read completed 1", "llm/2 model completed 0"}
		if got := describeSteps(info.Steps); strings.Join(got, "|") != strings.Join(wantSteps, "|") {
			t.Fatalf("show: steps %q; want %q", got, wantSteps)
		}
	})
}
