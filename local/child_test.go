package local_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// countModel counts the model calls of the provider it wraps.
type countModel struct {
	llm.Provider
	n atomic.Int64
}

func (c *countModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	c.n.Add(1)
	return c.Provider.Complete(ctx, req)
}

// tree is a planner whose model calls the agent tool "filer", a child run
// with its own scripted model, over a real file store and the demo tools.
type tree struct {
	j                *local.Engine
	exec             *execute.Executor
	planner, filer   *countModel
	tickets, journal string
}

// fileTask is the planner's call of the filer.
const fileTask = `{"task":"File a ticket for read access to the orders database."}`

// ticketCall is the filer's call of the demo write create_ticket (gated by
// approval).
var ticketCall = llm.ScriptedCall{Name: "create_ticket", Args: json.RawMessage(`{"title":"Read access to the orders database","body":"Filed by the filer agent."}`)}

// plannerScript calls the filer once, then answers with its answer.
func plannerScript() llm.Script {
	return llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "filer", Args: json.RawMessage(fileTask)}}},
		{Text: "The filer says: " + llm.LastToolResult, TextOnError: "The filer could not: " + llm.LastToolResult},
	}}
}

func newTree(t *testing.T, planner, filer llm.Script) *tree {
	t.Helper()
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journal")
	store, err := journal.NewFileStore(jdir)
	if err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "tickets.jsonl")
	cfg := tools.Config{Agents: map[string]tools.Agent{"filer": {Name: "filer", Description: "Files tickets.", System: "You file tickets.",
		Tools: []string{"lookup", "create_ticket"}, Model: "scripted"}}}
	set, err := tools.Open(t.Context(), cfg, tools.DemoConfig{Tickets: tickets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	tr := &tree{planner: &countModel{Provider: llm.NewScripted(planner)}, filer: &countModel{Provider: llm.NewScripted(filer)}, tickets: tickets, journal: jdir}
	tr.exec = &execute.Executor{Model: tr.planner, Models: map[string]llm.Provider{"filer": tr.filer}, Tools: set, Content: content.NewMemStore()}
	loop := agent.Loop{Tools: set.Specs()}
	tr.j = &local.Engine{Store: store, Loop: loop, Agents: local.AgentsOf(tr.exec, loop)}
	return tr
}

func (tr *tree) drive(t *testing.T, id string) agent.Outcome {
	t.Helper()
	o, err := tr.j.Drive(t.Context(), id, agent.UserMessages("Get me read access to the orders database."), tr.exec)
	if err != nil {
		t.Fatalf("drive %s: %v", id, err)
	}
	return o
}

func (tr *tree) show(t *testing.T, id string) local.RunInfo {
	t.Helper()
	info, err := tr.j.Show(id)
	if err != nil {
		t.Fatalf("show %s: %v", id, err)
	}
	return info
}

// ownUsage is the model calls and tokens recorded in runID's own journal.
func (tr *tree) ownUsage(t *testing.T, runID string) (int, agent.Usage) {
	t.Helper()
	recs, err := tr.j.Store.Load(runID)
	if err != nil {
		t.Fatal(err)
	}
	n, u := 0, agent.Usage{}
	for _, r := range recs {
		if r.Type == journal.StepCompleted && strings.HasPrefix(r.Step, "llm/") {
			reply, err := agent.DecodeModelReply(r.Result)
			if err != nil {
				t.Fatal(err)
			}
			n, u = n+1, u.Add(reply.Usage)
		}
	}
	return n, u
}

func (tr *tree) calls() (planner, filer int64) { return tr.planner.n.Load(), tr.filer.n.Load() }

// filerScript files one ticket and answers with its id.
func filerScript() llm.Script {
	return llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{ticketCall}},
		{Text: "Filed as " + llm.LastToolResult, TextOnError: "Not filed: " + llm.LastToolResult},
	}}
}

// TestChildApprovedThroughParent: the planner calls the filer, whose
// create_ticket waits for approval; the parent shows the child's wait and
// marker, the approval sent to the parent reaches the child, one ticket is
// filed, the parent's usage is the sum of both runs', and each model is
// called exactly as often as its script has turns, resumes included.
func TestChildApprovedThroughParent(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	const id = "planner-1"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	o := tr.drive(t, id)
	if o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 || o.Pending[0].Marker != "tool/1/0/create_ticket" || !strings.Contains(o.Reason, child) {
		t.Fatalf("first drive: %+v; want AwaitingApproval on the child's tool/1/0/create_ticket, naming %s", o, child)
	}
	info := tr.show(t, id)
	if info.Status != agent.StatusAwaitingApproval || info.Child == nil || info.Child.RunID != child || info.Child.Agent != "filer" ||
		len(info.Pending) != 1 || info.Pending[0].Marker != "tool/1/0/create_ticket" || info.Turns != 2 {
		t.Fatalf("show parent: %+v (child %+v); want the child's wait, 2 model calls", info, info.Child)
	}
	if ci := tr.show(t, child); ci.Status != agent.StatusAwaitingApproval || ci.Agent != "filer" || ci.Parent != id {
		t.Fatalf("show child: %+v", ci)
	}
	// A marker the child does not wait on is refused by the child's checks.
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: "tool/9/0/create_ticket"}); err == nil {
		t.Fatal("approving a marker nobody waits on: nil error")
	}
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: o.Pending[0].Marker, Digest: o.Pending[0].Digest}); err != nil {
		t.Fatalf("approve through the parent: %v", err)
	}
	if recs, _ := tr.j.Store.Load(id); len(recs) != 2 {
		t.Fatalf("the parent's journal has %d records after the approval, want 2 (run.started, llm/1): it went to the child", len(recs))
	}
	if o = tr.drive(t, id); o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "The filer says: Filed as") {
		t.Fatalf("after approval: %+v", o)
	}
	if n := testenv.TicketCount(t, tr.tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	if p, f := tr.calls(); p != 2 || f != 2 {
		t.Fatalf("model calls: planner %d, filer %d; want 2 and 2", p, f)
	}
	pn, pu := tr.ownUsage(t, id)
	cn, cu := tr.ownUsage(t, child)
	info = tr.show(t, id)
	if pn != 2 || cn != 2 || info.Turns != 4 || info.Usage != pu.Add(cu) || pu.Total() == 0 || cu.Total() == 0 {
		t.Fatalf("parent usage %+v over %d calls; want %+v + %+v over 2+2 (parent %d, child %d calls)", info.Usage, info.Turns, pu, cu, pn, cn)
	}
	if info.Status != agent.StatusCompleted || tr.show(t, child).Status != agent.StatusCompleted {
		t.Fatalf("statuses: parent %s, child %s", info.Status, tr.show(t, child).Status)
	}
	// A resumed parent runs nothing again: the child's answer is recorded.
	if o = tr.drive(t, id); o.Status != agent.StatusCompleted {
		t.Fatalf("resumed: %+v", o)
	}
	if p, f := tr.calls(); p != 2 || f != 2 || testenv.TicketCount(t, tr.tickets) != 1 {
		t.Fatalf("after resuming: planner %d, filer %d calls, %d tickets", p, f, testenv.TicketCount(t, tr.tickets))
	}
}

// TestChildApprovedOnItsOwnID: the child's own run id takes the approval
// too, checked with the agent's tools, and the child's deny is an answer
// the parent's model reads.
func TestChildApprovedOnItsOwnID(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	const id = "planner-2"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	if o := tr.drive(t, id); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("first drive: %+v", o)
	}
	if err := tr.j.Signal(t.Context(), child, operator.Signal{Name: operator.SignalDeny, Marker: "tool/1/0/create_ticket", Reason: "not today"}); err != nil {
		t.Fatalf("deny on the child's id: %v", err)
	}
	o := tr.drive(t, id)
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "The filer says: Not filed") || !strings.Contains(o.Answer, "not today") {
		t.Fatalf("after the deny: %+v", o)
	}
	if n := testenv.TicketCount(t, tr.tickets); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
	// Driving the child by its own id is refused: its parent drives it.
	if _, err := tr.j.Drive(t.Context(), child, agent.UserMessages("x"), tr.exec); err == nil || !strings.Contains(err.Error(), "child run of agent filer") {
		t.Fatalf("drive the child: %v", err)
	}
}

// TestChildBudgetOfTree: a parent allowed 5 model calls and a child that
// needs 6 (the parent made 1, so the child gets 4): the tree parks
// BudgetExceeded; raising the parent's budget gives the child its new
// share, and the tree completes.
func TestChildBudgetOfTree(t *testing.T) {
	t.Parallel()
	look := llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"database access"}`)}}}
	filer := llm.Script{Turns: []llm.Turn{look, look, look, look, look, {Text: "looked it up five times"}}}
	tr := newTree(t, plannerScript(), filer)
	tr.j.Limits = agent.Budget{MaxTurns: 5}
	const id = "planner-3"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	o := tr.drive(t, id)
	if o.Status != agent.StatusBudgetExceeded || !strings.Contains(o.Reason, child) || !strings.Contains(o.Reason, "its limit is 4") {
		t.Fatalf("first drive: %+v; want BudgetExceeded naming the child and its limit of 4", o)
	}
	if p, f := tr.calls(); p != 1 || f != 4 {
		t.Fatalf("model calls: planner %d, filer %d; want 1 and 4", p, f)
	}
	info := tr.show(t, id)
	if info.Status != agent.StatusBudgetExceeded || info.Turns != 5 || info.Child == nil || info.Child.Status != agent.StatusBudgetExceeded {
		t.Fatalf("show parent: %+v", info)
	}
	if w, err := tr.j.Waiting(); err != nil || len(w) != 2 {
		t.Fatalf("waiting: %+v, %v; want the parent and the child", w, err)
	}
	// The child's budget is its share of the parent's: raised there only.
	if err := tr.j.Signal(t.Context(), child, operator.Signal{Name: operator.SignalBudget, MaxTurns: 50}); err == nil || !strings.Contains(err.Error(), "raise the budget of run "+id) {
		t.Fatalf("a budget sent to the child: %v; want it refused naming %s", err, id)
	}
	// The raise is checked against the whole tree's 5 calls.
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalBudget, MaxTurns: 5}); err == nil {
		t.Fatal("a budget of 5 for a tree that made 5 calls: nil error")
	}
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalBudget, MaxTurns: 10}); err != nil {
		t.Fatalf("raise the parent's budget: %v", err)
	}
	if o = tr.drive(t, id); o.Status != agent.StatusCompleted || o.Answer != "The filer says: looked it up five times" {
		t.Fatalf("after the raise: %+v", o)
	}
	if p, f := tr.calls(); p != 2 || f != 6 {
		t.Fatalf("model calls: planner %d, filer %d; want 2 and 6", p, f)
	}
	if info = tr.show(t, id); info.Turns != 8 || info.Budget.MaxTurns != 10 {
		t.Fatalf("show parent: %d calls of %d; want 8 of 10", info.Turns, info.Budget.MaxTurns)
	}
	if ci := tr.show(t, child); ci.Status != agent.StatusCompleted || ci.Budget.MaxTurns != 9 || ci.Turns != 6 {
		t.Fatalf("show child: %s, %d calls of %d; want Completed, 6 of 9", ci.Status, ci.Turns, ci.Budget.MaxTurns)
	}
}

// TestChildCancelledWithParent: a parent followed by its driver waits on
// its child's approval; cancelling the parent ends both Cancelled, the
// driver returns Cancelled, and nothing is filed.
func TestChildCancelledWithParent(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	tr.j.Follow = true
	const id = "planner-4"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	waits := make(chan agent.Outcome, 4)
	tr.j.OnWait = func(o agent.Outcome) { waits <- o }
	type result struct {
		o   agent.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := tr.j.Drive(t.Context(), id, agent.UserMessages("Get me read access to the orders database."), tr.exec)
		done <- result{o, err}
	}()
	select {
	case o := <-waits:
		if o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 || o.Pending[0].Marker != "tool/1/0/create_ticket" {
			t.Fatalf("the follower waits in %+v", o)
		}
	case r := <-done:
		t.Fatalf("drive returned before waiting: %+v, %v", r.o, r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("no wait within 30s")
	}
	if err := tr.j.Cancel(t.Context(), id); err != nil {
		t.Fatalf("cancel the parent: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.o.Status != agent.StatusCancelled {
			t.Fatalf("the driver returned %+v, %v; want Cancelled", r.o, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the driver did not end within 30s of the cancel")
	}
	if p, c := tr.show(t, id).Status, tr.show(t, child).Status; p != agent.StatusCancelled || c != agent.StatusCancelled {
		t.Fatalf("statuses: parent %s, child %s; want both Cancelled", p, c)
	}
	if n := testenv.TicketCount(t, tr.tickets); n != 0 {
		t.Fatalf("tickets: %d, want 0", n)
	}
	if p, f := tr.calls(); p != 1 || f != 1 {
		t.Fatalf("model calls: planner %d, filer %d; want 1 and 1", p, f)
	}
}

// TestChildFollowedThroughApproval: a following driver of the parent wakes
// when the approval sent to the parent lands in the child's journal, and
// drives the tree to its end.
func TestChildFollowedThroughApproval(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	tr.j.Follow = true
	const id = "planner-5"
	waits := make(chan agent.Outcome, 4)
	tr.j.OnWait = func(o agent.Outcome) { waits <- o }
	done := make(chan error, 1)
	var out agent.Outcome
	go func() {
		o, err := tr.j.Drive(t.Context(), id, agent.UserMessages("Get me read access to the orders database."), tr.exec)
		out = o
		done <- err
	}()
	var o agent.Outcome
	select {
	case o = <-waits:
	case <-time.After(30 * time.Second):
		t.Fatal("no wait within 30s")
	}
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: o.Pending[0].Marker, Digest: o.Pending[0].Digest}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	select {
	case err := <-done:
		if err != nil || out.Status != agent.StatusCompleted {
			t.Fatalf("the driver returned %+v, %v; want Completed", out, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the driver did not finish within 30s of the approval")
	}
	if n := testenv.TicketCount(t, tr.tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	if p, f := tr.calls(); p != 2 || f != 2 {
		t.Fatalf("model calls: planner %d, filer %d; want 2 and 2", p, f)
	}
}

// TestChildIndeterminateReconciledThroughParent: the child's write crashes
// after its effect; the parent shows the child Indeterminate at its step,
// reconcile done sent to the parent settles the child's step, and the tree
// completes with the one ticket the crashed write filed.
func TestChildIndeterminateReconciledThroughParent(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	const id, step = "planner-6", "tool/1/0/create_ticket"
	crash := &counting{calls: map[string]int{}, crashAfter: step}
	agents := tr.j.Agents
	tr.j.Agents = func(name string) (local.Agent, error) {
		a, err := agents(name)
		crash.inner, a.Exec = a.Exec, crash
		return a, err
	}
	o := tr.drive(t, id)
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: step, Digest: o.Pending[0].Digest}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if _, err := tr.j.Drive(t.Context(), id, agent.UserMessages("Get me read access to the orders database."), tr.exec); err == nil {
		t.Fatal("the crashing write returned no error")
	}
	child := agent.ChildRunID(id, "tool/1/0/filer")
	if o = tr.drive(t, id); o.Status != agent.StatusIndeterminate || o.Step != step || !strings.Contains(o.Reason, child) {
		t.Fatalf("after the crash: %+v; want Indeterminate at the child's %s, naming %s", o, step, child)
	}
	if info := tr.show(t, id); info.Status != agent.StatusIndeterminate || info.Indeterminate != step || info.Child == nil {
		t.Fatalf("show parent: %+v", info)
	}
	if err := tr.j.Reconcile(t.Context(), id, step, operator.OutcomeDone, "TICKET-1"); err != nil {
		t.Fatalf("reconcile done through the parent: %v", err)
	}
	if o = tr.drive(t, id); o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
		t.Fatalf("after done: %+v", o)
	}
	if n, c := testenv.TicketCount(t, tr.tickets), crash.count(step); n != 1 || c != 1 {
		t.Fatalf("tickets %d, create_ticket calls %d; want 1 and 1", n, c)
	}
	if p, f := tr.calls(); p != 2 || f != 2 {
		t.Fatalf("model calls: planner %d, filer %d; want 2 and 2", p, f)
	}
}

// TestChildFailedIsAnErrorResult: a child that fails (an empty answer, on
// an engine that fails on those) is an error result naming the agent, the
// child run and why, which the parent's model reads; the parent completes.
func TestChildFailedIsAnErrorResult(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), llm.Script{Turns: []llm.Turn{{Text: " "}}})
	tr.exec.FailOnEmpty = true
	const id = "planner-7"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	o := tr.drive(t, id)
	if o.Status != agent.StatusCompleted || !strings.HasPrefix(o.Answer, "The filer could not: agent filer (child run "+child+") is Failed: ") {
		t.Fatalf("drive: %+v; want the planner's answer on the child's failure", o)
	}
	if s := tr.show(t, child).Status; s != agent.StatusFailed {
		t.Fatalf("child: %s, want Failed", s)
	}
}

// TestChildCancelledWithParkedParent: no driver runs the tree; cancelling
// the parent parked on its child's approval cancels the child, a later
// drive says Cancelled, and an approval is refused.
func TestChildCancelledWithParkedParent(t *testing.T) {
	t.Parallel()
	tr := newTree(t, plannerScript(), filerScript())
	const id = "planner-8"
	child := agent.ChildRunID(id, "tool/1/0/filer")
	o := tr.drive(t, id)
	if o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("first drive: %+v", o)
	}
	if err := tr.j.Cancel(t.Context(), id); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if o := tr.drive(t, id); o.Status != agent.StatusCancelled {
		t.Fatalf("drive after the cancel: %+v", o)
	}
	if p, c := tr.show(t, id).Status, tr.show(t, child).Status; p != agent.StatusCancelled || c != agent.StatusCancelled {
		t.Fatalf("statuses: parent %s, child %s; want both Cancelled", p, c)
	}
	if err := tr.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: o.Pending[0].Marker, Digest: o.Pending[0].Digest}); err == nil {
		t.Fatal("an approval after the cancel: nil error")
	}
	if p, f := tr.calls(); p != 1 || f != 1 || testenv.TicketCount(t, tr.tickets) != 0 {
		t.Fatalf("model calls: planner %d, filer %d, tickets %d; want 1, 1, 0", p, f, testenv.TicketCount(t, tr.tickets))
	}
}

// TestGrandchildCountsInTree: the filer calls another agent (checker, on
// the filer's model); the checker's calls count in the filer's and the
// planner's usage.
func TestGrandchildCountsInTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := journal.NewFileStore(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := tools.Config{Agents: map[string]tools.Agent{
		"filer":   {Name: "filer", Description: "Files tickets.", Tools: []string{"checker"}, Model: "scripted"},
		"checker": {Name: "checker", Description: "Checks.", Model: "scripted"},
	}}
	set, err := tools.Open(t.Context(), cfg, tools.DemoConfig{Tickets: filepath.Join(dir, "tickets.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	planner := &countModel{Provider: llm.NewScripted(plannerScript())}
	filer := &countModel{Provider: llm.NewScripted(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "checker", Args: json.RawMessage(`{"task":"check it"}`)}}},
		{Text: "checked: " + llm.LastToolResult},
	}})}
	checker := &countModel{Provider: llm.NewScripted(llm.Script{Turns: []llm.Turn{{Text: "all good"}}})}
	exec := &execute.Executor{Model: planner, Models: map[string]llm.Provider{"filer": filer, "checker": checker}, Tools: set, Content: content.NewMemStore()}
	loop := agent.Loop{Tools: set.Specs()}
	j := &local.Engine{Store: store, Loop: loop, Agents: local.AgentsOf(exec, loop)}
	const id = "planner-9"
	o, err := j.Drive(t.Context(), id, agent.UserMessages("go"), exec)
	if err != nil || o.Status != agent.StatusCompleted || o.Answer != "The filer says: checked: all good" {
		t.Fatalf("drive: %+v, %v", o, err)
	}
	if p, f, c := planner.n.Load(), filer.n.Load(), checker.n.Load(); p != 2 || f != 2 || c != 1 {
		t.Fatalf("model calls: planner %d, filer %d, checker %d; want 2, 2, 1", p, f, c)
	}
	child := agent.ChildRunID(id, "tool/1/0/filer")
	for run, want := range map[string]int{id: 5, child: 3, agent.ChildRunID(child, "tool/1/0/checker"): 1} {
		info, err := j.Show(run)
		if err != nil || info.Turns != want || info.Status != agent.StatusCompleted {
			t.Errorf("show %s: %d model calls, %s, %v; want %d, Completed", run, info.Turns, info.Status, err, want)
		}
	}
}
