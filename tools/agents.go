package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrun/agentrun/agent"
)

// Agent tools: a tool whose call runs another agent as a child run.

// Agent declares an agent tool: the calling model sees Name, Description
// and Parameters like any tool's; a call runs a child run of its own model,
// system prompt and tools, whose final answer is the call's result.
type Agent struct {
	// Name is the tool's name; it must not be the name of another offered
	// tool. Required (the key of the file's "agents" object).
	Name string
	// Description tells the calling model what the agent does. Required.
	Description string
	// Parameters is the JSON Schema of the call's arguments, an object
	// schema. Default DefaultAgentParameters: one string, "task".
	Parameters json.RawMessage
	// Model names the child's model as AGENTRUN_MODEL does (llm.ModelFormat).
	// Default "": the worker's model.
	Model string
	// System is the child's system prompt. Default "".
	System string
	// Tools names the child's tools: offered tools, or other agent tools.
	// Default none: the child only answers.
	Tools []string
	// Approval overrides, by tool name, whether the child's calls of that
	// tool wait for a person ("always", "never" or "deny"); each name must
	// be in Tools. Default: as the worker's configuration says.
	Approval map[string]string
}

// DefaultAgentParameters is the argument schema of an agent tool that
// declares none: the task to give the agent.
var DefaultAgentParameters = json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"what the agent should do"}},"required":["task"]}`)

// DefaultAgentDepth is how deeply agent tools may nest by default: a run
// that calls an agent is depth 1, an agent that calls another is 2.
const DefaultAgentDepth = 3

var agentFields = []string{"description", "parameters", "model", "system", "tools", "approval"}

func parseAgents(c Config, raw json.RawMessage) (map[string]Agent, error) {
	ms, err := object(c, "agents", raw, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Agent, len(ms))
	for _, m := range ms {
		a, err := parseAgent(c, fmt.Sprintf("agents[%q]", m.key), m.val)
		if err != nil {
			return nil, err
		}
		a.Name = m.key
		out[m.key] = a
	}
	return out, nil
}

func parseAgent(c Config, f string, raw json.RawMessage) (Agent, error) {
	var a Agent
	ms, err := object(c, f, raw, agentFields)
	if err != nil {
		return a, err
	}
	for _, m := range ms {
		g := f + "." + m.key
		switch m.key {
		case "description":
			err = str(c, g, m.val, &a.Description)
		case "model":
			err = str(c, g, m.val, &a.Model)
		case "system":
			err = str(c, g, m.val, &a.System)
		case "parameters":
			a.Parameters = m.val
		case "tools":
			if json.Unmarshal(m.val, &a.Tools) != nil {
				err = c.fail(g, "%s is not an array of strings; want tool names such as [\"lookup\"]", short(m.val))
			}
		case "approval":
			a.Approval, err = strMap(c, g, m.val)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// validateAgents checks the agent tools' rules that need no server: the
// fields, and that no agent reaches itself and none nests deeper than
// depth (0: DefaultAgentDepth).
func (c Config) validateAgents() error {
	depth := c.AgentDepth
	if depth == 0 {
		depth = DefaultAgentDepth
	}
	if depth < 0 {
		return c.fail("agent_depth", "%d is negative; want a positive number of levels (default %d)", depth, DefaultAgentDepth)
	}
	for _, name := range sortedKeys(c.Agents) {
		a, f := c.Agents[name], fmt.Sprintf("agents[%q]", name)
		switch {
		case !agent.ValidToolName(name):
			// A tool name every provider takes (agent.ValidToolName), and
			// part of its child runs' ids.
			return c.fail(f, "%q is not an agent name; want %s (the calling model's tool name, such as \"researcher\")", name, agent.ToolNameRule)
		case strings.TrimSpace(a.Description) == "":
			return c.fail(f+".description", "missing; want a sentence telling the calling model what the agent does")
		}
		if a.Parameters != nil {
			var schema map[string]any
			if json.Unmarshal(a.Parameters, &schema) != nil || schema["type"] != "object" {
				return c.fail(f+".parameters", "%s is not an object schema; want a JSON Schema such as {\"type\":\"object\",\"properties\":{...}}", short(a.Parameters))
			}
		}
		for i, t := range a.Tools {
			if t == "" {
				return c.fail(fmt.Sprintf("%s.tools[%d]", f, i), "empty tool name; want the name of an offered tool or of another agent")
			}
			if slices.Index(a.Tools, t) != i {
				return c.fail(fmt.Sprintf("%s.tools[%d]", f, i), "%q is named twice", t)
			}
		}
		for _, t := range sortedKeys(a.Approval) {
			v := a.Approval[t]
			switch {
			case !slices.Contains(a.Tools, t):
				return c.fail(fmt.Sprintf("%s.approval[%q]", f, t), "%q is not one of this agent's tools; valid: %s", t, orNoneList(a.Tools))
			case v != agent.ApprovalAlways && v != agent.ApprovalNever && v != agent.ApprovalDeny:
				return c.fail(fmt.Sprintf("%s.approval[%q]", f, t), "%q is not an approval; want %q, %q or %q", v, agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny)
			}
		}
	}
	// Cycles and depth: walk the agents each agent calls.
	for _, name := range sortedKeys(c.Agents) {
		if path, ok := c.agentCycle(name, []string{name}); ok {
			return c.fail(fmt.Sprintf("agents[%q].tools", name), "the agent calls itself: %s; an agent may not reach itself, directly or through other agents", strings.Join(path, " → "))
		}
		if d, path := c.agentDepth(name); d > depth {
			return c.fail(fmt.Sprintf("agents[%q].tools", name), "agents nest %d deep (%s); at most %d (agent_depth)", d, strings.Join(path, " → "), depth)
		}
	}
	return nil
}

// agentCycle returns a path from path's first agent back to it, if any,
// through the agents the last agent of path calls.
func (c Config) agentCycle(start string, path []string) ([]string, bool) {
	for _, t := range c.Agents[path[len(path)-1]].Tools {
		if t == start {
			return append(slices.Clone(path), t), true
		}
		if _, isAgent := c.Agents[t]; !isAgent || slices.Contains(path, t) {
			continue
		}
		if p, ok := c.agentCycle(start, append(path, t)); ok {
			return p, true
		}
	}
	return nil, false
}

// agentDepth returns how many levels of runs a call of agent name makes
// (1: a child that calls no agent) and the deepest path; the agents must
// have no cycle.
func (c Config) agentDepth(name string) (int, []string) {
	best, bestPath := 1, []string{name}
	for _, t := range c.Agents[name].Tools {
		if _, isAgent := c.Agents[t]; !isAgent {
			continue
		}
		if d, p := c.agentDepth(t); d+1 > best {
			best, bestPath = d+1, append([]string{name}, p...)
		}
	}
	return best, bestPath
}

// checkAgentTools checks the agents' tools against the tools offered
// (names; from says where each comes from): each names an offered tool
// or an agent, and no agent takes the name of an offered tool.
func (c Config) checkAgentTools(offered []string, from map[string]string) error {
	for _, name := range sortedKeys(c.Agents) {
		if w, ok := from[name]; ok {
			return c.fail(fmt.Sprintf("agents[%q]", name), "the name is also a tool offered by %s; want a name no tool has", w)
		}
		for i, t := range c.Agents[name].Tools {
			if _, isAgent := c.Agents[t]; isAgent || slices.Contains(offered, t) {
				continue
			}
			return c.fail(fmt.Sprintf("agents[%q].tools[%d]", name, i), "unknown tool %q; valid: %s", t, orNoneList(append(slices.Clone(offered), sortedKeys(c.Agents)...)))
		}
	}
	return nil
}

func orNoneList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// agentTool is an agent tool in a Set: the calling model sees its spec;
// engines run its calls as child runs, never through Call.
type agentTool struct{ spec agent.ToolSpec }

// AgentTool returns the tool through which a run calls agent a: the model
// sees a's name, description and parameters; an engine runs each call as a
// child run of a, never through Call.
func AgentTool(a Agent) Tool { return newAgentTool(a) }

func newAgentTool(a Agent) *agentTool {
	params := a.Parameters
	if params == nil {
		params = DefaultAgentParameters
	}
	return &agentTool{spec: agent.ToolSpec{Name: a.Name, Description: a.Description, Schema: params, Kind: agent.KindRead, Agent: true}}
}

func (t *agentTool) Spec() agent.ToolSpec { return t.spec }

func (t *agentTool) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	return agent.ToolResult{}, fmt.Errorf("%w: %q", ErrAgentCall, t.spec.Name)
}

// ErrAgentCall is the error of calling an agent tool through Set.Call: an
// engine runs the call as a child run.
var ErrAgentCall = errors.New("an agent tool runs as a child run, not through Call")

// Agents returns the agent tools the set was opened with, by name.
func (s *Set) Agents() map[string]Agent { return s.agents }

// Agent returns the tools of a run of the named agent: the tools it names,
// the same as in s (an agent tool among them stays an agent tool), each with
// the agent's approval override applied. It shares s's tools: closing it
// closes nothing.
func (s *Set) Agent(name string) (*Set, error) {
	a, ok := s.agents[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q; the agents are: %s", name, orNoneList(sortedKeys(s.agents)))
	}
	sub := &Set{agents: s.agents}
	for _, n := range a.Tools {
		i := s.index(n)
		if i < 0 {
			return nil, fmt.Errorf("agent %q: unknown tool %q", name, n) // Open checked the names
		}
		t := s.tools[i]
		if v, ok := a.Approval[n]; ok {
			if at, isAgent := t.(*agentTool); isAgent {
				spec := at.spec
				spec.Approval = v
				t = &agentTool{spec: spec}
			} else {
				t = Apply(t, Override{Approval: v})
			}
		}
		sub.tools = append(sub.tools, t)
		sub.timeouts = append(sub.timeouts, s.timeouts[i])
	}
	return sub, nil
}

// AgentModels returns the model each agent tool names (llm.ModelFormat),
// by agent name; "" for an agent that uses the worker's model.
func (s *Set) AgentModels() map[string]string {
	out := make(map[string]string, len(s.agents))
	for name, a := range s.agents {
		out[name] = a.Model
	}
	return out
}
