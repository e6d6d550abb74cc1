package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// TestAgentCalledOnly: an agent's Parameters are its schema as a tool of
// the agents that call it; its ToolApproval overrides a shared tool's
// approval in its own runs' catalogs only (an activity tool stays one,
// with its own timeout), and an agent tool's in the caller's; a NoStart
// agent runs only in calls: a run that names it at its start is refused,
// on Temporal and on the local engine.
func TestAgentCalledOnly(t *testing.T) {
	t.Parallel()
	m := script(llm.Turn{Text: "hi"})
	lookup, err := agentrun.NewTool(agentrun.ToolOptions{Name: "lookup"}, func(context.Context, struct{}) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	type refundIn struct {
		Order string `json:"order"`
	}
	refund, err := agentrun.ActivityTool(agentrun.ToolOptions{Name: "refund", Write: true, Idempotent: true},
		func(context.Context, refundIn) (string, error) { return "", nil },
		agentrun.ActivityOptions{Name: "IssueRefund", TaskQueue: "payments", StartToCloseTimeout: 40 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	params := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`)
	cfg := agentrun.Config{Journal: t.TempDir(), Agents: []agentrun.Agent{
		{Name: "support", Model: m, Tools: []tools.Tool{lookup, refund}, Agents: []string{"refunds"},
			ToolApproval: map[string]agentrun.Decision{"refunds": agentrun.Ask}},
		{Name: "refunds", Description: "Refunds orders.", Parameters: params, Model: m, Tools: []tools.Tool{refund, lookup},
			ToolApproval: map[string]agentrun.Decision{"refund": agentrun.Allow}, NoStart: true},
	}}
	var r actsRecorder
	if err := agentrun.Register(&r, cfg); err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(r.acts)
	list := func(agentName string) activities.Catalog {
		t.Helper()
		v, err := env.ExecuteActivity(r.acts.ListAgentTools, agentName)
		if agentName == "" {
			v, err = env.ExecuteActivity(r.acts.ListTools)
		}
		if err != nil {
			t.Fatalf("list %q: %v", agentName, err)
		}
		var c activities.Catalog
		if err := v.Get(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	approvals := func(c activities.Catalog) string {
		var out []string
		for _, tl := range c.Tools {
			out = append(out, tl.Name+"="+tl.Approval)
		}
		return strings.Join(out, " ")
	}
	root, sub := list(""), list("refunds")
	if got, want := approvals(root), "lookup= refund= refunds=always"; got != want {
		t.Errorf("support's catalog: %s; want %s", got, want)
	}
	if got, want := approvals(sub), "refund=never lookup="; got != want {
		t.Errorf("refunds' catalog: %s; want %s", got, want)
	}
	if root.Timeouts["refund"] != 40*time.Second || sub.Timeouts["refund"] != 40*time.Second {
		t.Errorf("refund's timeout: %s for support, %s for refunds; want 40s in both", root.Timeouts["refund"], sub.Timeouts["refund"])
	}
	refunds, _ := r.acts.Exec.Tools.Lookup("refunds")
	if spec := refunds.Spec(); !spec.Agent || string(spec.Schema) != string(params) {
		t.Errorf("the refunds agent tool: agent %t, schema %s; want its Parameters", spec.Agent, spec.Schema)
	}
	sched, _ := r.acts.Exec.Named["refunds"].Tools.Lookup("refund")
	if _, ok := sched.(tools.Scheduled); !ok || sched.Spec().Activity == nil {
		t.Errorf("refunds' refund is %T; want an activity tool still", sched)
	}

	if _, err := env.ExecuteActivity(r.acts.ListAgentToolsAtStart, "refunds"); err == nil || !strings.Contains(err.Error(), "the agents a run may start with are: support") {
		t.Errorf("a run naming refunds at its start: %v; want refused, naming support", err)
	}
	if _, err := env.ExecuteActivity(r.acts.ListAgentToolsAtStart, "support"); err != nil {
		t.Errorf("a run naming support at its start: %v", err)
	}
	l, err := agentrun.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Start(t.Context(), agentrun.StartOptions{ID: "r1", Prompt: "refund order 7", Agent: "refunds"}); !errors.Is(err, agentrun.ErrUnknownAgent) {
		t.Errorf("a local run naming refunds at its start: %v; want ErrUnknownAgent", err)
	}
}
