package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

type ticketIn struct {
	Title string `json:"title"`
}

type lookupIn struct {
	Resource string `json:"resource"`
}

// ticketDesk is the hand example in Go: a lookup (read), then a ticket
// (a write that waits for approval), then the answer; with counts of
// what ran.
type ticketDesk struct {
	tickets, lookups atomic.Int32
	lookup, ticket   *agentrun.Tool
}

func newTicketDesk(t *testing.T) *ticketDesk {
	d := &ticketDesk{}
	var err error
	d.lookup, err = agentrun.NewTool(agentrun.ToolOptions{Name: "lookup", Description: "Look a resource's policy up."},
		func(_ context.Context, in lookupIn) (string, error) {
			d.lookups.Add(1)
			return "policy of " + in.Resource + ": request access with a ticket", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	d.ticket, err = agentrun.NewTool(agentrun.ToolOptions{Name: "create_ticket", Description: "File a ticket.", Write: true},
		func(_ context.Context, in ticketIn) (string, error) {
			return fmt.Sprintf("TICKET-%d", d.tickets.Add(1)), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// handTurns is the hand example's script; answer is its last turn.
func handTurns(ticketTitle, answer string) []llm.Turn {
	return []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"resource":"orders"}`)}}},
		{ToolCalls: []llm.ScriptedCall{{Name: "create_ticket", Args: json.RawMessage(`{"title":"` + ticketTitle + `"}`)}}},
		{Text: answer + " " + llm.LastToolResult},
	}
}

// TestForkOnTemporal: the hand example, then forks of it. After its
// approval onto another agent with its own prompt: no model call before
// the fork point, no new ticket, the new answer. Before its ticket:
// refused naming the write; acknowledged, approval asked again and
// exactly one new ticket. A replay runs no tool. Bad forks are one line.
func TestForkOnTemporal(t *testing.T) {
	t.Parallel()
	srv := devClientServer(t)
	c := srv.Client
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	d := newTicketDesk(t)
	desk := []tools.Tool{d.lookup, d.ticket}
	origModel := &countModel{Model: script(handTurns("Read access", "Filed")...)}
	otherModel := &recordingModel{Model: script(handTurns("Write access", "Different answer:")...)}
	other := &countModel{Model: otherModel}
	ac := agentWorker(t, c, "fork-temporal",
		agentrun.Agent{Name: "desk", Model: origModel, Tools: desk, System: "You file tickets."},
		agentrun.Agent{Name: "other", Model: other, Tools: desk, System: "You are terse."},
	)
	approveAll := func(r *agentrun.Run) {
		t.Helper()
		waitStatus(ctx, t, c, r.ID(), agentrun.StatusAwaitingApproval)
		pend, err := r.Pending(ctx)
		if err != nil || len(pend) != 1 {
			t.Fatalf("%s pending %v, %v", r.ID(), pend, err)
		}
		if _, err := r.Approve(ctx, pend[0].Marker, pend[0].Digest); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(r *agentrun.Run, want string) agentrun.Result {
		t.Helper()
		res, err := r.Wait(ctx)
		if err != nil || res.Status != agentrun.StatusCompleted || res.Answer != want {
			t.Fatalf("%s: %+v, %v; want answer %q", r.ID(), res, err, want)
		}
		return res
	}

	origin, err := ac.Start(ctx, agentrun.StartOptions{ID: "fork-origin", Agent: "desk", Prompt: "I need read access to the orders database."})
	if err != nil {
		t.Fatal(err)
	}
	// In flight: no fork.
	waitStatus(ctx, t, c, origin.ID(), agentrun.StatusAwaitingApproval)
	_, err = ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "llm/3", ID: "fork-early"})
	oneLineContains(t, err, "run fork-origin is still in flight")
	approveAll(origin)
	wait(origin, "Filed TICKET-1")
	if n, tk := origModel.calls.Load(), d.tickets.Load(); n != 3 || tk != 1 {
		t.Fatalf("origin: %d model calls, %d tickets; want 3 and 1", n, tk)
	}

	// After the approval, onto the other agent with a prompt of its own.
	f1, err := ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "llm/3", Agent: "other", System: "Answer in five words."})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f1.ID(), "fork-origin-fork-llm.3-") {
		t.Fatalf("fork id %q", f1.ID())
	}
	res := wait(f1, "Different answer: TICKET-1")
	if n, o, tk := origModel.calls.Load(), other.calls.Load(), d.tickets.Load(); n != 3 || o != 1 || tk != 1 {
		t.Fatalf("fork after approval: %d origin model calls, %d on the other agent, %d tickets; want 3, 1, 1", n, o, tk)
	}
	if got := otherModel.systems; len(got) != 1 || got[0] != "Answer in five words." {
		t.Fatalf("the fork's model saw system prompts %q", got)
	}
	st, err := f1.State(ctx)
	if err != nil || st.Fork == nil || st.Fork.Origin != origin.ID() || st.Fork.From != "llm/3" || st.Fork.Agent != "other" || !st.Fork.System || st.Turns != 1 {
		t.Fatalf("fork state %+v (fork %+v), %v", st, st.Fork, err)
	}
	if res.Steps != 1 {
		t.Fatalf("the fork ran %d steps; want 1 (llm/3)", res.Steps)
	}

	// Before the ticket: refused, naming it.
	_, err = ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "llm/2", ID: "fork-refused"})
	if !errors.Is(err, agentrun.ErrForkRefused) {
		t.Fatalf("fork before the ticket: %v; want ErrForkRefused", err)
	}
	oneLineContains(t, err, "fork of fork-origin from llm/2: fork-origin made 1 write at or after that step, which the fork may make again: tool/2/0/create_ticket (returned TICKET-1); acknowledge with --ack-writes")
	// Acknowledged: the approval is asked again, and one new ticket.
	f2, err := ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "tool/2/0/create_ticket", AckWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	approveAll(f2)
	wait(f2, "Filed TICKET-2")
	if n, tk, lk := origModel.calls.Load(), d.tickets.Load(), d.lookups.Load(); n != 4 || tk != 2 || lk != 1 {
		t.Fatalf("acknowledged fork: %d model calls, %d tickets, %d lookups; want 4 (its llm/3), 2, 1", n, tk, lk)
	}
	st, err = f2.State(ctx)
	if err != nil || st.Fork == nil || len(st.Fork.Acked) != 1 || st.Fork.Acked[0].Step != "tool/2/0/create_ticket" {
		t.Fatalf("acknowledged fork's lineage %+v, %v", st.Fork, err)
	}

	keepHistory(t, srv, f2.ID())

	// A replay from the start onto the other agent: its lookup is the
	// origin's, its ticket (other arguments) refused; nothing runs.
	f3, err := ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "llm/1", Agent: "other", Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	wait(f3, "Different answer: replay: fork-origin made no call of create_ticket with these arguments; a replay runs no tool")
	if tk, lk := d.tickets.Load(), d.lookups.Load(); tk != 2 || lk != 1 {
		t.Fatalf("replay: %d tickets, %d lookups; want 2 and 1 (none ran)", tk, lk)
	}

	keepHistory(t, srv, f3.ID())
	drift, err := ac.Drift(ctx, f3.ID())
	if err != nil || drift.Departed != "llm/2" || len(drift.NewCalls) != 1 || !strings.HasPrefix(drift.NewCalls[0], "create_ticket") || !drift.AnswerChanged {
		t.Fatalf("replay's drift %+v, %v; want departed at llm/2, one new call (create_ticket), answer changed", drift, err)
	}
	if d, err := ac.Drift(ctx, origin.ID()); err == nil {
		t.Fatalf("drift of a run that is no fork: %+v", d)
	}

	// The search attribute lists the origin's forks: the three that ran,
	// and the two refused ones, which failed at their start.
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: `AgentRunForkOf = "fork-origin" AND ExecutionStatus = "Completed"`})
		if err == nil && list.GetCount() == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("completed forks listed by AgentRunForkOf: %v, %v; want 3", list.GetCount(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A workflow of another type, ended: no agent run to fork.
	notRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fork-not-agentrun", TaskQueue: "fork-nobody-polls"}, "OtherWorkflow")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.TerminateWorkflow(ctx, notRun.GetID(), "", "done"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		origin string
		opts   agentrun.ForkOptions
		want   string
	}{
		{"no-such-run", agentrun.ForkOptions{From: "llm/1", ID: "fork-bad-1"}, "fork: no run no-such-run in this namespace"},
		{"fork-not-agentrun", agentrun.ForkOptions{From: "llm/1", ID: "fork-bad-6"}, "fork: run fork-not-agentrun is no agent run (its workflow type is OtherWorkflow, not AgentRun)"},
		{origin.ID(), agentrun.ForkOptions{From: "llm/9", ID: "fork-bad-2"}, "run fork-origin never reached llm/9: its last model step is llm/3"},
		{origin.ID(), agentrun.ForkOptions{From: "llm/3", ID: "fork-bad-3", Agent: "nobody"}, `fork: no agent "nobody" on this worker; the agents a run may start with are: desk, other`},
		{origin.ID(), agentrun.ForkOptions{From: "step 3", ID: "fork-bad-4"}, `fork: from "step 3" is not a step name`},
		{f1.ID(), agentrun.ForkOptions{From: "llm/2", ID: "fork-bad-7"}, "llm/2 is before the fork point of " + f1.ID() + " (a fork of fork-origin from llm/3): fork fork-origin instead"},
		{origin.ID(), agentrun.ForkOptions{From: "tool/3/0/lookup", ID: "fork-bad-5"}, "llm/3 asked for no such call (it asked for none)"},
	} {
		_, err := ac.Fork(ctx, tc.origin, tc.opts)
		oneLineContains(t, err, tc.want)
	}
}

func oneLineContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v; want one line containing %q", err, want)
	}
}

// firstCallModel records when its first call came.
type firstCallModel struct {
	agentrun.Model
	calls atomic.Int32
	first atomic.Int64 // unix nanoseconds
}

func (m *firstCallModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	if m.calls.Add(1) == 1 {
		m.first.Store(time.Now().UnixNano())
	}
	return m.Model.Complete(ctx, req)
}

// TestForkLongRun: a fork of a 1,000-turn run (which continued as new on
// the way) at turn 900 makes no model call before its fork point, and its
// first live step starts within 2 s of the fork.
func TestForkLongRun(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	const turns = 1000
	d := newTicketDesk(t)
	long := make([]llm.Turn, 0, turns)
	for i := 1; i < turns; i++ {
		long = append(long, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"resource":"db-%d"}`, i))}}})
	}
	long = append(long, llm.Turn{Text: "done after " + llm.LastToolResult})
	origModel := &firstCallModel{Model: script(long...)}
	alt := make([]llm.Turn, turns)
	for i := range alt {
		alt[i] = llm.Turn{Text: fmt.Sprintf("the fork's answer at turn %d", i+1)}
	}
	forkModel := &firstCallModel{Model: script(alt...)}
	ac := agentWorker(t, c, "fork-long",
		agentrun.Agent{Name: "long", Model: origModel, Tools: []tools.Tool{d.lookup}},
		agentrun.Agent{Name: "alt", Model: forkModel, Tools: []tools.Tool{d.lookup}},
	)
	origin, err := ac.Start(ctx, agentrun.StartOptions{ID: "fork-long-origin", Agent: "long", Prompt: "look everything up", MaxTurns: turns + 10})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := origin.Wait(ctx); err != nil || res.Status != agentrun.StatusCompleted {
		t.Fatalf("origin: %+v, %v", res, err)
	}
	if n := origModel.calls.Load(); n != turns {
		t.Fatalf("origin: %d model calls; want %d", n, turns)
	}
	desc, err := c.DescribeWorkflow(ctx, origin.ID(), "")
	if err != nil {
		t.Fatal(err)
	}
	if desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId() == desc.RawResponse.GetWorkflowExecutionInfo().GetFirstRunId() {
		t.Fatalf("the origin never continued as new; the test wants a history of several executions")
	}
	began := time.Now()
	f, err := ac.Fork(ctx, origin.ID(), agentrun.ForkOptions{From: "llm/900", Agent: "alt"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Wait(ctx)
	if err != nil || res.Answer != "the fork's answer at turn 900" {
		t.Fatalf("fork: %+v, %v", res, err)
	}
	firstLive := time.Unix(0, forkModel.first.Load()).Sub(began)
	if n, o := forkModel.calls.Load(), origModel.calls.Load(); n != 1 || o != turns {
		t.Fatalf("fork at turn 900: %d model calls on its agent, %d on the origin's; want 1 and %d", n, o, turns)
	}
	bound := 2 * time.Second // the bound, for a plain build
	if raceEnabled {
		bound *= 5
	}
	if firstLive > bound {
		t.Fatalf("the fork's first live step came %s after the fork; want within %s", firstLive, bound)
	}
	st, err := f.State(ctx)
	if err != nil || st.Turns != 1 || st.Fork == nil || st.Fork.Base != 899 {
		t.Fatalf("fork state: turns %d, fork %+v, %v; want 1 model call counted, base 899", st.Turns, st.Fork, err)
	}
	t.Logf("first live step %s after the fork of a %d-turn run at turn 900", firstLive.Round(time.Millisecond), turns)
}

// turnModel answers by its turn (the assistant messages so far, plus one)
// and the run's first user message.
type turnModel struct {
	reply func(turn int, user string) agent.ModelReply
	calls atomic.Int32
}

func (m *turnModel) Name() string { return "turns" }

func (m *turnModel) Complete(_ context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.calls.Add(1)
	turn, user := 1, ""
	for _, msg := range req.Messages {
		switch {
		case msg.Role == agent.RoleAssistant:
			turn++
		case msg.Role == agent.RoleUser && user == "":
			user = msg.Content
		}
	}
	return m.reply(turn, user), nil
}

func toolCall(name, args string) agent.ModelReply {
	return agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c", Name: name, Args: json.RawMessage(args)}}}, FinishReason: agent.FinishToolCalls}
}

func finalAnswer(text string) agent.ModelReply {
	return agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: text}, FinishReason: agent.FinishStop}
}

// TestReplayTwentyOnTemporal: 20 recorded runs replayed onto a candidate
// agent that departs at a known step in 5 of them: the drift reports name
// exactly those 5 and their steps; no tool runs during the replays.
func TestReplayTwentyOnTemporal(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	d := newTicketDesk(t)
	origin := &turnModel{reply: func(turn int, _ string) agent.ModelReply {
		switch turn {
		case 1:
			return toolCall("lookup", `{"resource":"orders"}`)
		case 2:
			return toolCall("create_ticket", `{"title":"Read access"}`)
		}
		return finalAnswer("done")
	}}
	departAt := map[int]string{0: "llm/2", 4: "llm/2", 8: "llm/2", 12: "llm/3", 16: "llm/3"}
	candidate := &turnModel{reply: func(turn int, user string) agent.ModelReply {
		var i int
		fmt.Sscanf(user, "request %d", &i)
		switch {
		case turn == 1:
			return toolCall("lookup", `{ "resource" : "orders" }`) // the same call, written another way
		case turn == 2 && departAt[i] == "llm/2":
			return toolCall("lookup", `{"resource":"payments"}`)
		case turn == 2:
			return toolCall("create_ticket", `{"title":"Read access"}`)
		case turn == 3 && departAt[i] == "llm/3":
			return finalAnswer("done, differently")
		}
		return finalAnswer("done")
	}}
	allow := func(agentrun.Call) agentrun.Decision { return agentrun.Allow }
	ac := agentWorker(t, c, "fork-replay-twenty",
		agentrun.Agent{Name: "desk", Model: origin, Tools: []tools.Tool{d.lookup, d.ticket}, Approve: allow},
		agentrun.Agent{Name: "candidate", Model: candidate, Tools: []tools.Tool{d.lookup, d.ticket}, Approve: allow},
	)
	for i := range 20 {
		r, err := ac.Start(ctx, agentrun.StartOptions{ID: fmt.Sprint("replay-origin-", i), Agent: "desk", Prompt: fmt.Sprint("request ", i)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := r.Wait(ctx); err != nil || res.Answer != "done" {
			t.Fatalf("origin %d: %+v, %v", i, res, err)
		}
	}
	lookups, tickets := d.lookups.Load(), d.tickets.Load()
	if lookups != 20 || tickets != 20 {
		t.Fatalf("origins: %d lookups, %d tickets; want 20 and 20", lookups, tickets)
	}
	departed := map[int]string{}
	for i := range 20 {
		f, err := ac.Fork(ctx, fmt.Sprint("replay-origin-", i), agentrun.ForkOptions{From: "llm/1", Agent: "candidate", Replay: true})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := f.Wait(ctx); err != nil || res.Status != agentrun.StatusCompleted {
			t.Fatalf("replay %d: %+v, %v", i, res, err)
		}
		drift, err := ac.Drift(ctx, f.ID())
		if err != nil {
			t.Fatal(err)
		}
		if drift.Departed != "" {
			departed[i] = drift.Departed
		}
		if strings.Contains(drift.String(), "\n") || drift.AnswerChanged != (departAt[i] == "llm/3") {
			t.Errorf("replay %d: %s", i, drift)
		}
	}
	if fmt.Sprint(departed) != fmt.Sprint(departAt) {
		t.Fatalf("departed %v; want %v", departed, departAt)
	}
	if l, tk := d.lookups.Load(), d.tickets.Load(); l != lookups || tk != tickets {
		t.Fatalf("the replays ran tools: %d lookups, %d tickets (before: %d, %d)", l, tk, lookups, tickets)
	}
	if n := candidate.calls.Load(); n != 60 {
		t.Fatalf("candidate model calls %d; want 60 (3 per replay)", n)
	}
}
