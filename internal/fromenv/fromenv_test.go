package fromenv_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/fromenv"
	"github.com/agentrun/agentrun/workflows"
)

// recorder is a worker.Registry that records what Register puts on it.
type recorder struct {
	worker.Registry // nil: Register calls only the methods below
	workflows       []any
	workflowNames   []string
	acts            *activities.Activities
	prefixes        []string
	bare            int // RegisterActivity calls: the legacy names
}

func (r *recorder) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	r.workflows, r.workflowNames = append(r.workflows, w), append(r.workflowNames, o.Name)
}

func (r *recorder) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	r.acts, r.prefixes = a.(*activities.Activities), append(r.prefixes, o.Name)
}

func (r *recorder) RegisterActivity(any) { r.bare++ }

// load reads the programs' configuration from env (AGENTRUN_JOURNAL a
// fresh folder unless env sets it).
func load(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	if env["AGENTRUN_JOURNAL"] == "" {
		env["AGENTRUN_JOURNAL"] = t.TempDir()
	}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWorkerRegistersThroughTheFrontDoor: the worker's Config, built from
// the environment, registers through agentrun.Register: AgentRun, the
// activities under their prefix and the legacy bare names, the tools
// file's agent as an agent of the Config that a run's calls start (with
// its own model) but that no run may name at its start, and the
// environment's executor settings for every agent.
func TestWorkerRegistersThroughTheFrontDoor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"agents": {"researcher": {"description": "Finds the policy.", "tools": ["find_ticket"], "model": "scripted"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := load(t, map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TOOLS": toolsFile, "AGENTRUN_TICKETS": filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_CONTEXT_BUDGET": "5000", "AGENTRUN_FAIL_ON_EMPTY_ANSWER": "1", "AGENTRUN_STREAM": "off"})
	cfg, guardAt, closeTools, err := fromenv.Worker(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	if want := filepath.Join(dir, "temporal"); guardAt != want {
		t.Errorf("guard at %q, want %q", guardAt, want)
	}
	var r recorder
	if err := agentrun.Register(&r, cfg); err != nil {
		t.Fatal(err)
	}
	if len(r.workflows) != 1 || r.workflowNames[0] != agentrun.WorkflowName || reflect.ValueOf(r.workflows[0]).Pointer() != reflect.ValueOf(workflows.AgentRun).Pointer() {
		t.Fatalf("workflows registered: %v; want AgentRun alone", r.workflowNames)
	}
	if len(r.prefixes) != 1 || r.prefixes[0] != activities.Prefix || r.bare != 1 {
		t.Fatalf("activities registered under %v and %d times by bare name; want %q and once (the legacy names)", r.prefixes, r.bare, activities.Prefix)
	}
	a := r.acts
	if !a.NoStream || a.Exec.ContextBudget != 5000 || !a.Exec.FailOnEmpty || a.Exec.FailOnCut || len(a.Exec.Named) != 2 {
		t.Errorf("activities: NoStream %t, ContextBudget %d, FailOnEmpty %t, FailOnCut %t, Named %v; want true, 5000, true, false, the default agent and researcher",
			a.NoStream, a.Exec.ContextBudget, a.Exec.FailOnEmpty, a.Exec.FailOnCut, a.Exec.Named)
	}
	if _, ok := a.Exec.Tools.Lookup("researcher"); !ok {
		t.Errorf("the tools file's agent is not among the tools: %v", a.Exec.Tools.Specs())
	}
	sub, err := a.Exec.Agent("researcher")
	if err != nil || sub.Model == nil || sub.Model == a.Exec.Model || sub != a.Exec.Named["researcher"] || !sub.NoStart ||
		sub.ContextBudget != 5000 || !sub.FailOnEmpty || len(sub.Tools.Specs()) != 1 {
		t.Errorf("Agent(researcher) = %+v, %v; want the Config's agent, with its own model, one tool and the environment's settings", sub, err)
	}
	_, err = a.ListAgentToolsAtStart(t.Context(), "researcher")
	if err == nil || !strings.Contains(err.Error(), "the agents a run may start with are: none") {
		t.Errorf("a run naming the tools file's agent at its start: %v; want refused", err)
	}
	_, err = a.ListAgentToolsAtStart(t.Context(), fromenv.AgentName)
	if err == nil {
		t.Errorf("a run naming %q at its start was let through", fromenv.AgentName)
	}
}

// TestWorkerTestWorkflowChange: with the test-only workflow change on, the
// changed workflow is registered under AgentRun's name, and only it.
func TestWorkerTestWorkflowChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := load(t, map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TEST_WORKFLOW_CHANGE": "1", "AGENTRUN_TICKETS": filepath.Join(dir, "tickets.jsonl")})
	cfg, _, closeTools, err := fromenv.Worker(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	var r recorder
	if err := agentrun.Register(&r, cfg); err != nil {
		t.Fatal(err)
	}
	if len(r.workflows) != 1 || r.workflowNames[0] != agentrun.WorkflowName || reflect.ValueOf(r.workflows[0]).Pointer() == reflect.ValueOf(workflows.AgentRun).Pointer() {
		t.Fatalf("workflows registered: %v; want the changed AgentRun alone", r.workflowNames)
	}
}

// TestWorkerBadToolsFile: a tools file that cannot be used is one line
// naming it, and nothing is built.
func TestWorkerBadToolsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"agents": {"researcher": {"description": "x", "tools": ["nope"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TOOLS": toolsFile}
	c, err := config.Load(func(k string) string { return env[k] })
	if err == nil {
		_, _, _, err = fromenv.Worker(t.Context(), c, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "nope") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a tools file naming an unknown tool: %v; want one line naming it", err)
	}
}

// TestWorkerFileAgentNamedDefault: a tools file's agent may be named as
// the programs' default agent (AgentName), as before it was an agent of
// the Config: the default agent then takes another name, and a call of
// the file's agent runs the file's.
func TestWorkerFileAgentNamedDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"agents": {"default": {"description": "Answers.", "system": "You answer."}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := load(t, map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TOOLS": toolsFile, "AGENTRUN_TICKETS": filepath.Join(dir, "tickets.jsonl")})
	cfg, _, closeTools, err := fromenv.Worker(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	if len(cfg.Agents) != 2 || cfg.Agents[0].Name != fromenv.AgentName+"_" || cfg.Agents[1].Name != fromenv.AgentName {
		t.Fatalf("agents %q and %q; want %q, then the file's %q", cfg.Agents[0].Name, cfg.Agents[len(cfg.Agents)-1].Name, fromenv.AgentName+"_", fromenv.AgentName)
	}
	var r recorder
	if err := agentrun.Register(&r, cfg); err != nil {
		t.Fatal(err)
	}
	if sub, err := r.acts.Exec.Agent(fromenv.AgentName); err != nil || sub.System != "You answer." {
		t.Errorf("Agent(%q) = %v, %v; want the file's agent", fromenv.AgentName, sub, err)
	}
}

// TestWorkerFileAgentDepth: the tools file's agent_depth bounds the
// Config's agents, as it bounded the file's: four levels pass with
// agent_depth 4 (the library's bound is three).
func TestWorkerFileAgentDepth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(`{"agent_depth": 4, "agents": {"a": {"description": "A.", "tools": ["b"]}, "b": {"description": "B.", "tools": ["c"]},
	  "c": {"description": "C.", "tools": ["d"]}, "d": {"description": "D."}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := load(t, map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TOOLS": toolsFile, "AGENTRUN_TICKETS": filepath.Join(dir, "tickets.jsonl")})
	cfg, _, closeTools, err := fromenv.Worker(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	if err := agentrun.Register(&recorder{}, cfg); err != nil {
		t.Fatalf("four levels with agent_depth 4: %v", err)
	}
}
