package agentrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Stop()
	os.Exit(code)
}

// devClient is a client of the package's dev server (one for all its
// tests, each on its own task queue). It fails under CI=true when the
// server cannot start and is skipped otherwise.
func devClient(t *testing.T) client.Client {
	t.Helper()
	return testenv.DevServer(t).Client
}

// recordingModel records the system prompt of each request it answers.
type recordingModel struct {
	agentrun.Model
	mu      sync.Mutex
	systems []string
}

func (m *recordingModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.mu.Lock()
	sys := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == agent.RoleSystem {
		sys = req.Messages[0].Content
	}
	m.systems = append(m.systems, sys)
	m.mu.Unlock()
	return m.Model.Complete(ctx, req)
}

func script(turns ...llm.Turn) *llm.Scripted { return llm.NewScripted(llm.Script{Turns: turns}) }

// TestRegisterBesideTeamCode: agentrun registered on a team's worker that
// has a CallTool activity and a workflow of its own: both work; a run that
// names an agent gets its system prompt and tools (a Go write, approved
// once: exactly one refund); a run that names none runs the first agent;
// a run that names an unknown agent fails naming the agents.
func TestRegisterBesideTeamCode(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	var refunds atomic.Int32
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true},
		func(_ context.Context, in refundIn) (refundOut, error) {
			refunds.Add(1)
			return refundOut{Refund: fmt.Sprintf("R-%s-%d", in.Order, in.Amount)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	model := &recordingModel{Model: script(
		llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7","amount_cents":1200}`)}}},
		llm.Turn{Text: "Refunded: " + llm.LastToolResult},
	)}
	cfg := agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: []agentrun.Agent{
		{Name: "general", Model: script(llm.Turn{Text: "hello from general"})},
		{Name: "refunds", Description: "Refunds orders.", Model: model, System: "You handle refunds.", Tools: []tools.Tool{refund}},
	}}
	const queue = "team-queue"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterActivityWithOptions(func(context.Context) (string, error) { return "the team's own", nil }, activity.RegisterOptions{Name: "CallTool"})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		var s string
		err := workflow.ExecuteActivity(ctx, "CallTool").Get(ctx, &s)
		return s, err
	}, workflow.RegisterOptions{Name: "TeamWorkflow"})
	if err := agentrun.Register(w, cfg); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	team, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "team-1", TaskQueue: queue}, "TeamWorkflow")
	if err != nil {
		t.Fatal(err)
	}
	var own string
	if err := team.Get(ctx, &own); err != nil || own != "the team's own" {
		t.Fatalf("the team's workflow: %q, %v", own, err)
	}

	start := func(id, name string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, agentrun.WorkflowName,
			workflows.Input{Messages: agent.UserMessages("refund order 7"), Agent: name})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	run := start("refund-1", "refunds")
	waitStatus(ctx, t, c, "refund-1", agent.StatusAwaitingApproval)
	if err := c.SignalWorkflow(ctx, "refund-1", "", operator.SignalApprove, map[string]string{"Marker": "tool/1/0/refund"}); err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if want := `Refunded: {"refund":"R-7-1200"}`; res.Answer != want || refunds.Load() != 1 {
		t.Fatalf("answer %q, %d refunds; want %q and 1", res.Answer, refunds.Load(), want)
	}
	model.mu.Lock()
	systems := model.systems
	model.mu.Unlock()
	if len(systems) != 2 || systems[0] != "You handle refunds." || systems[1] != "You handle refunds." {
		t.Errorf("system prompts the model saw: %q; want the agent's in both calls", systems)
	}

	if err := start("general-1", "").Get(ctx, &res); err != nil || res.Answer != "hello from general" {
		t.Errorf("a run naming no agent: %q, %v; want the first agent's answer", res.Answer, err)
	}
	err = start("unknown-1", "billing").Get(ctx, &res)
	if err == nil || !strings.Contains(err.Error(), `names agent "billing" at its start; the agents a run may start with are: general, refunds`) {
		t.Errorf("a run naming an unknown agent: %v", err)
	}
}

// waitStatus polls the run's state until it has status want.
func waitStatus(ctx context.Context, t *testing.T, c client.Client, id string, want agent.Status) {
	t.Helper()
	var st workflows.State
	for ctx.Err() == nil {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
		if err == nil && v.Get(&st) == nil && st.Status == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s: status %q, never %q", id, st.Status, want)
}

// TestConfigRefused: a configuration Register cannot use is one line
// naming the field, and nothing is registered.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	m := script(llm.Turn{Text: "hi"})
	ok := agentrun.Agent{Name: "a", Description: "A.", Model: m}
	lookup := func(name string) *agentrun.Tool {
		tl, err := agentrun.NewTool(agentrun.ToolOptions{Name: name}, func(context.Context, struct{}) (string, error) { return "", nil })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	one, other := lookup("lookup"), lookup("lookup")
	for _, c := range []struct {
		name string
		cfg  agentrun.Config
		want string
	}{
		{"no agents", agentrun.Config{Journal: "j"}, "Agents is empty"},
		{"no journal", agentrun.Config{Agents: []agentrun.Agent{ok}}, "Journal is empty"},
		{"bad name", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a b", Model: m}}}, `Agents[0].Name "a b" is not 1 to 64`},
		{"no model", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a"}}}, `agent "a" has no Model`},
		{"twice", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{ok, ok}}, `agent "a" is defined twice`},
		{"unknown sub-agent", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Model: m, Agents: []string{"b"}}}}, `agent "a" calls agent "b", which is not in Agents (a)`},
		{"cycle", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Description: "A.", Model: m, Agents: []string{"b"}}, {Name: "b", Description: "B.", Model: m, Agents: []string{"a"}}}}, "a → b → a"},
		{"parameters not an object", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Model: m, Parameters: json.RawMessage(`{"type":"string"}`)}}}, `agent "a": Parameters is not an object schema`},
		{"approval of another tool", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Model: m, Tools: []tools.Tool{one}, ToolApproval: map[string]agentrun.Decision{"refund": agentrun.Allow}}}}, `agent "a": ToolApproval names "refund", which is none of its Tools or Agents`},
		{"approval by tool", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Model: m, Tools: []tools.Tool{one}, ToolApproval: map[string]agentrun.Decision{"lookup": agentrun.ByTool}}}}, `ToolApproval["lookup"] is ""; want Ask, Allow or Deny`},
		{"two tools one name", agentrun.Config{Journal: "j", Agents: []agentrun.Agent{{Name: "a", Model: m, Tools: []tools.Tool{one}}, {Name: "b", Model: m, Tools: []tools.Tool{other}}}}, `different tools named "lookup"`},
	} {
		w := &countingRegistry{}
		err := agentrun.Register(w, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q", c.name, err, c.want)
		}
		if w.n != 0 {
			t.Errorf("%s: %d registrations after a refusal", c.name, w.n)
		}
		// The local engine refuses it the same way.
		if _, lerr := agentrun.NewLocal(c.cfg); lerr == nil || !strings.Contains(lerr.Error(), c.want) || strings.Contains(lerr.Error(), "\n") ||
			c.name != "no journal" && err != nil && lerr.Error() != err.Error() {
			t.Errorf("%s: NewLocal: %v; want Register's error, %v", c.name, lerr, err)
		}
	}
}

// countingRegistry counts registrations.
type countingRegistry struct {
	worker.Registry
	n int
}

func (r *countingRegistry) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) { r.n++ }
func (r *countingRegistry) RegisterActivityWithOptions(any, activity.RegisterOptions) { r.n++ }
func (r *countingRegistry) RegisterActivity(any)                                      { r.n++ }

// TestApprovalRule: on a real dev server, an agent's rule lets refunds
// under $50 through and leaves larger ones to the tool (a write: a person
// approves): a $12 refund runs with no approval asked, a $90 one waits,
// and once denied it never runs. The model reads the decision that was
// recorded for each call.
func TestApprovalRule(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	refund, refunds := countingRefund(t)
	var asked atomic.Int32
	rule := func(c agentrun.Call) agentrun.Decision {
		asked.Add(1)
		var in refundIn
		if c.Tool == "refund" && c.Args(&in) == nil && in.Amount < 5000 {
			return agentrun.Allow
		}
		return agentrun.ByTool
	}
	refundOf := func(cents int) *llm.Scripted {
		return script(
			llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(fmt.Sprintf(`{"order":"7","amount_cents":%d}`, cents))}}},
			llm.Turn{Text: "Refunded: " + llm.LastToolResult, TextOnError: "Not refunded: " + llm.LastToolResult},
		)
	}
	const queue = "rule-queue"
	w := worker.New(c, queue, worker.Options{})
	err := agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: []agentrun.Agent{
		{Name: "small", Model: refundOf(1200), Tools: []tools.Tool{refund}, Approve: rule},
		{Name: "large", Model: refundOf(9000), Tools: []tools.Tool{refund}, Approve: rule},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := func(id, name string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, agentrun.WorkflowName,
			workflows.Input{Messages: agent.UserMessages("refund order 7"), Agent: name})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	var res workflows.Result
	if err := start("rule-small", "small").Get(ctx, &res); err != nil || res.Answer != `Refunded: {"refund":"R-7"}` || refunds.Load() != 1 {
		t.Fatalf("the $12 refund: %q, %v, %d refunds; want it run with no approval, 1 refund", res.Answer, err, refunds.Load())
	}
	large := start("rule-large", "large")
	waitStatus(ctx, t, c, "rule-large", agent.StatusAwaitingApproval)
	if err := c.SignalWorkflow(ctx, "rule-large", "", operator.SignalDeny, map[string]string{"Marker": "tool/1/0/refund", "Reason": "too large"}); err != nil {
		t.Fatal(err)
	}
	if err := large.Get(ctx, &res); err != nil || !strings.HasPrefix(res.Answer, "Not refunded: ") || refunds.Load() != 1 {
		t.Fatalf("the $90 refund: %q, %v, %d refunds; want it denied, still 1 refund", res.Answer, err, refunds.Load())
	}
	// Asked once when each model asked, and again before the small
	// refund ran; a denied call never reaches its tool step.
	if n := asked.Load(); n != 3 {
		t.Errorf("the rule was asked %d times; want 3", n)
	}
}

// TestApprovalRulePanics: on a real dev server, an agent's rule that
// panics on the refund the model asks for fails the run with one line
// naming the agent, the tool and the panic value: the model was called
// once, the refund never ran, and nothing waits for a person.
func TestApprovalRulePanics(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	refund, refunds := countingRefund(t)
	model := &recordingModel{Model: script(
		llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7","amount_cents":1200}`)}}},
		llm.Turn{Text: "Refunded: " + llm.LastToolResult},
	)}
	rule := func(c agentrun.Call) agentrun.Decision {
		panic(fmt.Errorf("no limits loaded for %s", c.Tool)) // a bug in the team's rule
	}
	const queue = "panic-queue"
	w := worker.New(c, queue, worker.Options{})
	err := agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}, Approve: rule}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "rule-panics", TaskQueue: queue}, agentrun.WorkflowName,
		workflows.Input{Messages: agent.UserMessages("refund order 7")})
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	want := `agent "refunds": the approval rule panicked on a call of refund: no limits loaded for refund`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("the run: %v; want it failed with %q and no stack", err, want)
	}
	model.mu.Lock()
	calls := len(model.systems)
	model.mu.Unlock()
	if calls != 1 || refunds.Load() != 0 {
		t.Fatalf("%d model calls, %d refunds; want 1 and 0", calls, refunds.Load())
	}
	v, err := c.QueryWorkflow(ctx, "rule-panics", "", workflows.QueryState)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.State
	if err := v.Get(&st); err != nil || st.Status != agent.StatusFailed || len(st.Pending) != 0 || !strings.Contains(st.Reason, want) {
		t.Fatalf("state %s %q, %d pending, %v; want Failed naming the panic, none pending", st.Status, st.Reason, len(st.Pending), err)
	}
}

// TestRunAgentFromTeamWorkflow: on a real dev server, a team's workflow
// runs the refunds agent with RunAgent and returns its answer; the
// client approves the refund the run waits for (its typed arguments
// read first): exactly 1 refund. A workflow that runs an agent the
// worker lacks gets a Failed result, not an error.
func TestRunAgentFromTeamWorkflow(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	refund, refunds := countingRefund(t)
	model := script(
		llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7","amount_cents":1200}`)}}},
		llm.Turn{Text: "Refunded: " + llm.LastToolResult},
	)
	const queue = "child-queue"
	w := worker.New(c, queue, worker.Options{})
	support := func(ctx workflow.Context, agentName string) (agentrun.Result, error) {
		return agentrun.RunAgent(ctx, agentrun.StartOptions{Agent: agentName, Prompt: "refund order 7"})
	}
	w.RegisterWorkflowWithOptions(support, workflow.RegisterOptions{Name: "Support"})
	err := agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	parent, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "support-1", TaskQueue: queue}, "Support", "refunds")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	run := cl.Run("support-1-refunds")
	waitStatus(ctx, t, c, run.ID(), agent.StatusAwaitingApproval)
	pending, err := run.Pending(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %+v, %v; want the refund", pending, err)
	}
	var args refundIn
	if err := pending[0].Args(&args); err != nil || args.Order != "7" || args.Amount != 1200 {
		t.Fatalf("the refund's arguments: %+v, %v", args, err)
	}
	if _, err := run.Approve(ctx, pending[0].Marker, pending[0].Digest); err != nil {
		t.Fatal(err)
	}
	var res agentrun.Result
	if err := parent.Get(ctx, &res); err != nil || res.Status != agentrun.StatusCompleted || res.Answer != `Refunded: {"refund":"R-7"}` || refunds.Load() != 1 {
		t.Fatalf("the team's workflow: %+v, %v, %d refunds; want the answer and 1 refund", res, err, refunds.Load())
	}
	other, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "support-2", TaskQueue: queue}, "Support", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Get(ctx, &res); err != nil || res.Status != agentrun.StatusFailed || !strings.Contains(res.Reason, `names agent "billing" at its start`) {
		t.Fatalf("an agent the worker lacks: %+v, %v; want a Failed result naming it", res, err)
	}
}

// countingRefund is a refund write that counts its calls and answers
// R-<order>.
func countingRefund(t *testing.T) (*agentrun.Tool, *atomic.Int32) {
	t.Helper()
	refunds := &atomic.Int32{}
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true},
		func(_ context.Context, in refundIn) (refundOut, error) {
			refunds.Add(1)
			return refundOut{Refund: "R-" + in.Order}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return refund, refunds
}
