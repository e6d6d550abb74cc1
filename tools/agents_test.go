package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestAgentsConfig: agent tools are read from the file, and each broken
// rule is a one-line error naming the file, the agent and what is valid.
func TestAgentsConfig(t *testing.T) {
	load := func(t *testing.T, body string) (Config, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "tools.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	c, err := load(t, `{"agents": {"researcher": {"description": "Finds the policy.", "system": "You research.", "tools": ["lookup"], "approval": {"lookup": "never"}, "model": "scripted"},
	  "planner": {"description": "Plans.", "tools": ["researcher", "create_ticket"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Agents["researcher"]
	if r.Name != "researcher" || r.Description != "Finds the policy." || r.System != "You research." || r.Model != "scripted" ||
		strings.Join(r.Tools, ",") != "lookup" || r.Approval["lookup"] != "never" || r.Parameters != nil {
		t.Errorf("researcher = %+v", r)
	}
	if p := c.Agents["planner"]; strings.Join(p.Tools, ",") != "researcher,create_ticket" {
		t.Errorf("planner = %+v", p)
	}

	for _, tc := range []struct{ name, body, want string }{
		{"no description", `{"agents": {"a": {"tools": []}}}`, `agents["a"].description: missing`},
		{"unknown field", `{"agents": {"a": {"description": "x", "prompt": "y"}}}`, `unknown field "prompt"; valid fields: description, parameters, model, system, tools, approval`},
		{"schema not an object", `{"agents": {"a": {"description": "x", "parameters": {"type": "string"}}}}`, `agents["a"].parameters: {"type": "string"} is not an object schema`},
		{"itself", `{"agents": {"a": {"description": "x", "tools": ["a"]}}}`, `agents["a"].tools: the agent calls itself: a → a`},
		{"cycle", `{"agents": {"a": {"description": "x", "tools": ["b"]}, "b": {"description": "y", "tools": ["lookup", "a"]}}}`, `agents["a"].tools: the agent calls itself: a → b → a`},
		{"too deep", `{"agent_depth": 2, "agents": {"a": {"description": "x", "tools": ["b"]}, "b": {"description": "y", "tools": ["c"]}, "c": {"description": "z"}}}`, `agents["a"].tools: agents nest 3 deep (a → b → c); at most 2 (agent_depth)`},
		{"approval of another tool", `{"agents": {"a": {"description": "x", "tools": ["lookup"], "approval": {"create_ticket": "never"}}}}`, `agents["a"].approval["create_ticket"]: "create_ticket" is not one of this agent's tools; valid: lookup`},
		{"bad approval", `{"agents": {"a": {"description": "x", "tools": ["lookup"], "approval": {"lookup": "sometimes"}}}}`, `"sometimes" is not an approval`},
		{"named twice", `{"agents": {"a": {"description": "x", "tools": ["lookup", "lookup"]}}}`, `agents["a"].tools[1]: "lookup" is named twice`},
		{"depth not a number", `{"agent_depth": "deep"}`, `agent_depth: "deep" is not a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestAgentsOpen: at start-up an agent's tools must be offered tools or
// agents, and an agent may not take an offered tool's name.
func TestAgentsOpen(t *testing.T) {
	demo := DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")}
	set, err := Open(context.Background(), Config{Agents: map[string]Agent{"a": {Name: "a", Description: "x", Tools: []string{"lookup"}}}}, demo)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	set.Close()
	for _, tc := range []struct {
		agents map[string]Agent
		want   string
	}{
		{map[string]Agent{"a": {Name: "a", Description: "x", Tools: []string{"send_email"}}}, `agents["a"].tools[0]: unknown tool "send_email"; valid: lookup, create_ticket, find_ticket, a`},
		{map[string]Agent{"lookup": {Name: "lookup", Description: "x"}}, `agents["lookup"]: the name is also a tool offered by demo`},
	} {
		_, err := Open(context.Background(), Config{Agents: tc.agents}, demo)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v): %v; want %q", tc.agents, err, tc.want)
		}
	}
}

// TestAgentSet: a set offers each agent as a read tool marked Agent, with
// its description and (default) parameters; Set.Agent gives the agent's
// own tools, its approval overrides applied, a nested agent staying an
// agent; calling an agent through Call is an error.
func TestAgentSet(t *testing.T) {
	demo := DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")}
	cfg := Config{Agents: map[string]Agent{
		"planner": {Name: "planner", Description: "plans", Tools: []string{"lookup", "filer"}, Approval: map[string]string{"filer": "always"}},
		"filer":   {Name: "filer", Description: "files", Tools: []string{"create_ticket"}, Approval: map[string]string{"create_ticket": "never"}, Model: "scripted"},
	}}
	set, err := Open(context.Background(), cfg, demo)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	byName := map[string]agent.ToolSpec{}
	for _, s := range set.Specs() {
		byName[s.Name] = s
	}
	if f := byName["filer"]; !f.Agent || f.Kind != agent.KindRead || f.Description != "files" || string(f.Schema) != string(DefaultAgentParameters) {
		t.Fatalf("filer's spec: %+v", f)
	}
	if byName["create_ticket"].Agent {
		t.Fatal("create_ticket is marked as an agent")
	}
	if _, err := set.Call(context.Background(), "filer", nil); !errors.Is(err, ErrAgentCall) {
		t.Fatalf("Call of an agent: %v, want ErrAgentCall", err)
	}
	filer, err := set.Agent("filer")
	if err != nil {
		t.Fatal(err)
	}
	if specs := filer.Specs(); len(specs) != 1 || specs[0].Name != "create_ticket" || specs[0].Approval != agent.ApprovalNever || specs[0].Kind != agent.KindWrite {
		t.Fatalf("filer's tools: %+v", specs)
	}
	planner, err := set.Agent("planner")
	if err != nil {
		t.Fatal(err)
	}
	if specs := planner.Specs(); len(specs) != 2 || specs[1].Name != "filer" || !specs[1].Agent || specs[1].Approval != agent.ApprovalAlways {
		t.Fatalf("planner's tools: %+v", specs)
	}
	if _, err := set.Agent("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch"; the agents are: filer, planner`) {
		t.Fatalf("unknown agent: %v", err)
	}
	if m := set.AgentModels(); m["filer"] != "scripted" || m["planner"] != "" {
		t.Fatalf("AgentModels: %v", m)
	}
}
