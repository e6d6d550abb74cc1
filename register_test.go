package agentrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// devClient starts a dev server of the test's own and returns a client of
// its default namespace. It fails under CI=true when the server cannot
// start and is skipped otherwise.
func devClient(t *testing.T) client.Client {
	t.Helper()
	var out strings.Builder
	cli, err := devserver.CLI()
	var dev *testsuite.DevServer
	if err == nil {
		dev, err = devserver.Start(t.Context(), cli, &out)
	}
	if err != nil {
		testkit.Unavailable(t, "Temporal dev server", fmt.Errorf("%w\n%s", err, out.String()))
	}
	t.Cleanup(func() { _ = dev.Stop() })
	c, err := client.Dial(client.Options{HostPort: dev.FrontendHostPort(), Namespace: "default",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
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
