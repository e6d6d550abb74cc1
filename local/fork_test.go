package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
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

// forkFixture is the hand example's tools over a real file journal, with
// one content store that the origin's executor and every fork's share.
type forkFixture struct {
	j       *local.Engine
	set     *tools.Set
	store   content.Store
	tickets string
}

func newForkFixture(t *testing.T) *forkFixture {
	t.Helper()
	dir := t.TempDir()
	js, err := journal.NewFileStore(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "tickets.jsonl")
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: tickets})...)
	if err != nil {
		t.Fatal(err)
	}
	f := &forkFixture{set: set, store: content.NewMemStore(), tickets: tickets}
	loop := agent.Loop{Tools: set.Specs()}
	f.j = &local.Engine{Store: js, Loop: loop, Agents: local.AgentsOf(f.exec(llm.NewScripted(llm.HandExample())), loop)}
	return f
}

// exec is an executor of model over the fixture's tools and content.
func (f *forkFixture) exec(model llm.Provider) *execute.Executor {
	return &execute.Executor{Model: model, Tools: f.set, Content: f.store}
}

// counted wraps an executor of model in a step counter.
func (f *forkFixture) counted(model llm.Provider) *counting {
	return &counting{inner: f.exec(model), calls: map[string]int{}}
}

// handRun runs the hand example as id to its end: approved, one ticket.
func (f *forkFixture) handRun(t *testing.T, id string) {
	t.Helper()
	exec := f.exec(llm.NewScripted(llm.HandExample()))
	in := agent.UserMessages(prompt)
	if o, err := f.j.Drive(t.Context(), id, in, exec); err != nil || o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("origin %s: %+v, %v", id, o, err)
	}
	if err := f.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep}); err != nil {
		t.Fatal(err)
	}
	if o, err := f.j.Drive(t.Context(), id, in, exec); err != nil || o.Status != agent.StatusCompleted {
		t.Fatalf("origin %s: %+v, %v", id, o, err)
	}
}

// otherAnswer is the hand example with another final answer.
func otherAnswer() llm.Script {
	s := llm.HandExample()
	s.Turns[2] = llm.Turn{Text: "Filed as " + llm.LastToolResult + "; expect an answer within a day."}
	return s
}

// TestForkAfterTicket: the hand example forked after its ticket (from
// llm/3) onto a model that answers differently: no model call before the
// fork point, one in it, no new ticket, the new answer, the lineage shown.
func TestForkAfterTicket(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	f.handRun(t, "hand")
	model := &countModel{Provider: llm.NewScripted(otherAnswer())}
	exec := f.counted(model)
	o, err := f.j.Fork(t.Context(), "hand-2", agent.Fork{Origin: "hand", From: "llm/3", Model: "scripted:other.json"}, exec)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "within a day") || !strings.Contains(o.Answer, "TICKET-1") {
		t.Fatalf("fork: %+v", o)
	}
	if n := model.n.Load(); n != 1 {
		t.Fatalf("model calls of the fork: %d, want 1 (llm/3 only)", n)
	}
	if n := exec.count("tool/"); n != 0 {
		t.Fatalf("tool calls of the fork: %d, want 0", n)
	}
	if n := testenv.TicketCount(t, f.tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	info, err := f.j.Show("hand-2")
	if err != nil {
		t.Fatal(err)
	}
	if info.Fork == nil || info.Fork.Ask.Origin != "hand" || info.Fork.Ask.From != "llm/3" || info.Turns != 1 || len(info.Steps) != 1 || info.Steps[0].Name != "llm/3" {
		t.Fatalf("show: %+v", info)
	}
	d, err := f.j.Drift("hand-2")
	if err != nil || d.Departed != "llm/3" || !d.AnswerChanged || len(d.NewCalls) != 0 {
		t.Fatalf("drift: %+v, %v", d, err)
	}
}

// TestForkBeforeTicket: a fork before the ticket is refused with the
// write named, and writes nothing; acknowledged, the approval is asked
// again and, approved, files exactly one new ticket.
func TestForkBeforeTicket(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	f.handRun(t, "hand")
	for _, from := range []string{"llm/1", "llm/2", ticketStep} {
		_, err := f.j.Fork(t.Context(), "again", agent.Fork{Origin: "hand", From: from}, f.exec(llm.NewScripted(llm.HandExample())))
		var he *agent.HazardError
		if !errors.As(err, &he) || len(he.Writes) != 1 || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), ticketStep+` (returned TICKET-1)`) {
			t.Fatalf("fork from %s: %v", from, err)
		}
	}
	if recs, _ := f.j.Store.Load("again"); len(recs) != 0 {
		t.Fatalf("a refused fork wrote %d records", len(recs))
	}
	model := &countModel{Provider: llm.NewScripted(llm.HandExample())}
	exec := f.counted(model)
	o, err := f.j.Fork(t.Context(), "again", agent.Fork{Origin: "hand", From: ticketStep, AckWrites: true}, exec)
	if err != nil || o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 || o.Pending[0].Marker != ticketStep {
		t.Fatalf("acknowledged fork: %+v, %v", o, err)
	}
	if err := f.j.Signal(t.Context(), "again", operator.Signal{Name: operator.SignalApprove, Marker: ticketStep}); err != nil {
		t.Fatal(err)
	}
	o, err = f.j.Drive(t.Context(), "again", agent.UserMessages(prompt), exec)
	if err != nil || o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-2") {
		t.Fatalf("approved fork: %+v, %v", o, err)
	}
	if n := testenv.TicketCount(t, f.tickets); n != 2 {
		t.Fatalf("tickets: %d, want 2", n)
	}
	if n, w := model.n.Load(), exec.count(ticketStep); n != 1 || w != 1 {
		t.Fatalf("fork: %d model calls, %d ticket calls; want 1 and 1", n, w)
	}
	info, err := f.j.Show("again")
	if err != nil || !info.Fork.Point.Acked || len(info.Fork.Point.Hazards) != 1 {
		t.Fatalf("show: %+v, %v", info.Fork, err)
	}
}

// TestForkErrors: each refusal is one line and writes nothing.
func TestForkErrors(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	f.handRun(t, "hand")
	exec := f.exec(llm.NewScripted(llm.HandExample()))
	if o, err := f.j.Drive(t.Context(), "waiting", agent.UserMessages(prompt), exec); err != nil || o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("waiting: %+v, %v", o, err)
	}
	for _, c := range []struct {
		id   string
		fork agent.Fork
		want string
	}{
		{"x1", agent.Fork{Origin: "nobody", From: "llm/1"}, `unknown run "nobody"`},
		{"x2", agent.Fork{Origin: "hand", From: "llm/9"}, "hand never reached it; its last step is llm/3"},
		{"x3", agent.Fork{Origin: "hand", From: "tool/1/0/create_ticket"}, "llm/1 asked for no such call (it asked for tool/1/0/lookup)"},
		{"x4", agent.Fork{Origin: "waiting", From: "llm/1"}, "it is AwaitingApproval, still in flight"},
		{"x5", agent.Fork{Origin: "hand", From: "llm/3", Agent: "nobody"}, "onto agent nobody"},
		{"hand", agent.Fork{Origin: "hand", From: "llm/3"}, "run id hand is taken"},
		{"bad id!", agent.Fork{Origin: "hand", From: "llm/3"}, "run id"},
		{"x6", agent.Fork{Origin: "hand", From: "step 3"}, "is not a step name"},
	} {
		_, err := f.j.Fork(t.Context(), c.id, c.fork, exec)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("fork %s %+v: %v, want %q", c.id, c.fork, err, c.want)
		}
		if recs, _ := f.j.Store.Load(c.id); c.id != "hand" && len(recs) != 0 {
			t.Errorf("fork %s wrote %d records", c.id, len(recs))
		}
	}
}

// funcModel answers with reply(turn, the newest user message), the turn
// being the assistant messages of the request plus one; it counts its
// calls and notes when the first came.
type funcModel struct {
	reply func(turn int, user string) agent.ModelReply
	n     atomic.Int64
	mu    sync.Mutex
	first time.Time
}

func (m *funcModel) Name() string { return "func" }

func (m *funcModel) Complete(_ context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	if m.n.Add(1) == 1 {
		m.mu.Lock()
		m.first = time.Now()
		m.mu.Unlock()
	}
	turn, user := 1, ""
	for _, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleAssistant:
			turn++
		case agent.RoleUser:
			user = msg.Content
		}
	}
	r := m.reply(turn, user)
	r.Message.Role, r.Usage = agent.RoleAssistant, agent.Usage{InputTokens: 10, OutputTokens: 5}
	return r, nil
}

func calls(cs ...agent.ToolCall) agent.ModelReply {
	for i := range cs {
		cs[i].ID = fmt.Sprint("c", i)
	}
	return agent.ModelReply{Message: agent.Message{ToolCalls: cs}, FinishReason: agent.FinishToolCalls}
}

func answer(text string) agent.ModelReply {
	return agent.ModelReply{Message: agent.Message{Content: text}, FinishReason: agent.FinishStop}
}

var (
	lookupDB    = agent.ToolCall{Name: "lookup", Args: json.RawMessage(`{"topic": "database access"}`)}
	lookupOther = agent.ToolCall{Name: "lookup", Args: json.RawMessage(`{"topic":"something else"}`)}
	fileTicket  = agent.ToolCall{Name: "create_ticket", Args: json.RawMessage(`{"body":"Read access.","title":"Orders database"}`)}
)

// TestReplayDrift: 20 recorded runs replayed from llm/2 onto a candidate
// that departs in 5 of them (at llm/2 in 3, at llm/3 in 2): the reports
// name those 5 and their steps, no tool runs, no approval is asked, and
// the matched calls carry the origin's results.
func TestReplayDrift(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	origin := &funcModel{reply: func(turn int, _ string) agent.ModelReply {
		switch turn {
		case 1:
			return calls(lookupDB)
		case 2:
			return calls(fileTicket)
		}
		return answer("done")
	}}
	departAt := map[int]string{0: "llm/2", 4: "llm/2", 8: "llm/2", 12: "llm/3", 16: "llm/3"}
	candidate := &funcModel{reply: func(turn int, user string) agent.ModelReply {
		var i int
		fmt.Sscanf(user, "request %d", &i)
		switch {
		case turn == 2 && departAt[i] == "llm/2":
			return calls(lookupOther)
		case turn == 2:
			// The same call, its arguments written another way.
			return calls(agent.ToolCall{Name: "create_ticket", Args: json.RawMessage(`{"title":"Orders database", "body":"Read access."}`)})
		case turn == 3 && departAt[i] == "llm/3":
			return answer("done, differently")
		}
		return answer("done")
	}}
	oexec := f.exec(origin)
	for i := range 20 {
		id, in := fmt.Sprint("run-", i), agent.UserMessages(fmt.Sprint("request ", i))
		if _, err := f.j.Drive(t.Context(), id, in, oexec); err != nil {
			t.Fatal(err)
		}
		if err := f.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalApprove, Marker: "tool/2/0/create_ticket"}); err != nil {
			t.Fatal(err)
		}
		if o, err := f.j.Drive(t.Context(), id, in, oexec); err != nil || o.Status != agent.StatusCompleted {
			t.Fatalf("origin %s: %+v, %v", id, o, err)
		}
	}
	exec := f.counted(candidate)
	departed := map[int]string{}
	for i := range 20 {
		fk := agent.Fork{Origin: fmt.Sprint("run-", i), From: "llm/2", Replay: true}
		id := agent.ForkID(fk)
		o, err := f.j.Fork(t.Context(), id, fk, exec)
		if err != nil || o.Status != agent.StatusCompleted {
			t.Fatalf("replay of run-%d: %+v, %v", i, o, err)
		}
		d, err := f.j.Drift(id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Departed != "" {
			departed[i] = d.Departed
		}
		if departAt[i] == "llm/2" && (len(d.NewCalls) != 1 || !strings.HasPrefix(d.NewCalls[0], "lookup ")) || d.AnswerChanged != (departAt[i] == "llm/3") {
			t.Errorf("run-%d: %s", i, d)
		}
		if strings.Contains(d.String(), "\n") {
			t.Errorf("drift line: %q", d)
		}
		info, err := f.j.Show(id)
		if err != nil {
			t.Fatal(err)
		}
		want := "tool/2/0/create_ticket"
		if departAt[i] == "llm/2" {
			want = agent.ReplayedNone
		}
		if info.Steps[1].Replayed != want {
			t.Errorf("run-%d: step %+v, want replayed %s", i, info.Steps[1], want)
		}
	}
	if fmt.Sprint(departed) != fmt.Sprint(departAt) {
		t.Fatalf("departed: %v, want %v", departed, departAt)
	}
	if n := exec.count("tool/"); n != 0 {
		t.Fatalf("tool executions in the replays: %d, want 0", n)
	}
	if n := testenv.TicketCount(t, f.tickets); n != 20 {
		t.Fatalf("tickets: %d, want the origins' 20", n)
	}
}

// TestFork1000Turns: a fork of a 1,000-turn run at turn 900 calls no model
// before its fork point, reaches its first model call within 2 s, and its
// budget counts only its own calls: 151 of them pass a limit of 1,000
// that the origin's 899 before them would have passed.
func TestFork1000Turns(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	// The origin's journal as the engine writes it, appended at once:
	// driving 1,000 turns here would take the engine's fold of the whole
	// journal before each step (seconds), which is not what is measured.
	budget := agent.Budget{MaxTurns: 1000}
	recs := []journal.Record{{Type: journal.RunStarted, Input: agent.UserMessages("go on"), Budget: &budget}}
	for n := 1; n <= 1000; n++ {
		reply := answer("done after 1000")
		if n < 1000 {
			reply = calls(agent.ToolCall{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"topic":"t%d"}`, n))})
		}
		reply.Message.Role, reply.Usage = agent.RoleAssistant, agent.Usage{InputTokens: 10, OutputTokens: 5}
		raw, err := agent.EncodeModelReply(reply)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, journal.Record{Type: journal.StepCompleted, Step: agent.ModelStep(n), Kind: agent.KindModel, Result: raw})
		if n < 1000 {
			recs = append(recs, journal.Record{Type: journal.StepCompleted, Step: agent.ToolStep(n, 0, "lookup"), Kind: agent.KindRead,
				Result: agent.EncodeToolResult(agent.ToolResult{Content: fmt.Sprint("policy ", n)})})
		}
	}
	recs = append(recs, journal.Record{Type: journal.RunCompleted, Answer: "done after 1000"})
	if err := f.j.Store.Append("long", 0, recs...); err != nil {
		t.Fatal(err)
	}
	if info, err := f.j.Show("long"); err != nil || info.Status != agent.StatusCompleted || info.Turns != 1000 {
		t.Fatalf("origin: %+v, %v", info.Status, err)
	}
	candidate := &funcModel{reply: func(turn int, _ string) agent.ModelReply {
		if turn < 1050 {
			return calls(agent.ToolCall{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"topic":"u%d"}`, turn))})
		}
		return answer("done after 1050")
	}}
	start := time.Now()
	o, err := f.j.Fork(t.Context(), "long-900", agent.Fork{Origin: "long", From: "llm/900"}, f.exec(candidate))
	if err != nil || o.Status != agent.StatusCompleted || o.Answer != "done after 1050" {
		t.Fatalf("fork: %+v, %v", o, err)
	}
	candidate.mu.Lock()
	first := candidate.first.Sub(start)
	candidate.mu.Unlock()
	bound := 2 * time.Second // the bound, for a plain build
	if raceEnabled {
		bound *= 5
	}
	if first > bound {
		t.Fatalf("first live model call after %s, want < %s", first, bound)
	}
	t.Logf("first live model call after %s", first)
	info, err := f.j.Show("long-900")
	if err != nil || candidate.n.Load() != 151 || info.Turns != 151 || info.Usage.InputTokens != 151*10 {
		t.Fatalf("fork: %d model calls, show %+v, %v; want 151", candidate.n.Load(), info, err)
	}
}

// sysModel notes the system prompt of each request.
type sysModel struct {
	llm.Provider
	mu      sync.Mutex
	systems []string
}

func (m *sysModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.mu.Lock()
	for _, msg := range req.Messages {
		if msg.Role == agent.RoleSystem {
			m.systems = append(m.systems, msg.Content)
		}
	}
	m.mu.Unlock()
	return m.Provider.Complete(ctx, req)
}

// TestForkSystem: a fork's system prompt goes to each live model step's
// request, once, and is recorded in its lineage.
func TestForkSystem(t *testing.T) {
	t.Parallel()
	f := newForkFixture(t)
	f.handRun(t, "hand")
	model := &sysModel{Provider: llm.NewScripted(llm.HandExample())}
	sys := "Answer in one line."
	o, err := f.j.Fork(t.Context(), "brief", agent.Fork{Origin: "hand", From: "llm/3", System: &sys}, f.exec(model))
	if err != nil || o.Status != agent.StatusCompleted {
		t.Fatalf("fork: %+v, %v", o, err)
	}
	if fmt.Sprint(model.systems) != "["+sys+"]" {
		t.Fatalf("system prompts asked: %q", model.systems)
	}
	if info, err := f.j.Show("brief"); err != nil || *info.Fork.Ask.System != sys {
		t.Fatalf("show: %+v, %v", info.Fork, err)
	}
}
