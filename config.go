package agentrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/frontdoor"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/tools"
)

// Model is a language model an agent calls: a provider of package llm
// (llm.NewScripted for tests; the OpenAI and Anthropic providers), or any
// type of your own that satisfies it.
type Model = llm.Provider

// Agent is a named agent: the model it calls, its instructions and the
// tools it may use. A worker runs several (Config.Agents); a run names its
// agent when it starts, and an agent may call others as tools.
type Agent struct {
	// Name names the agent at a run's start and as a tool of the agents
	// that call it: 1 to 64 letters, digits, '_' or '-'. Required.
	Name string
	// Description tells a calling agent's model what this agent does.
	// Required when another agent lists it in Agents.
	Description string
	// Model is the model the agent calls. Required.
	Model Model
	// System is the agent's system prompt, put first in every run of it.
	// Default "": none.
	System string
	// Tools are the tools the agent may call: tools made by NewTool, or
	// any tools.Tool (an MCP server's, through package tools/mcp). A name
	// is one tool on a worker: two agents may share a tool, never a name.
	Tools []tools.Tool
	// Approve is the agent's approval rule: it decides, from a call's
	// tool and arguments, whether the call waits for a person ("refunds
	// under $50 go through"). It runs once per call, on the worker, when
	// the model asks for the call, and its decision is recorded with the
	// run: a rule changed later never changes a run's past, and a call
	// runs only if the rule, asked again just before, decides no
	// stricter. It must be quick and must not act on the world. A rule
	// that panics decides nothing: the model step fails, naming the agent,
	// the tool and the panic value (the stack goes to Config.Logger), so
	// the run fails and no call of that reply runs; asked again before a
	// tool step, it refuses the step. A Decision that is none of the four
	// is Ask (a person sees the call), and the worker logs a warning.
	// Default nil: each tool's own Approval.
	Approve func(Call) Decision
	// Agents names other agents of the Config that this agent may call as
	// tools: each call runs a child run of that agent, with its model and
	// tools, within the calling run's budget. At most three levels deep;
	// no cycles.
	Agents []string
	// Parameters is the JSON Schema of a call's arguments when another
	// agent calls this one (an object schema); the call's arguments are the
	// child run's task. Default nil: tools.DefaultAgentParameters, one
	// string "task".
	Parameters json.RawMessage
	// ToolApproval overrides, by name, the Approval of this agent's tools
	// and of the agents it calls (Ask, Allow or Deny), in its runs only:
	// the tool stays one tool of the worker, and this agent's runs list it
	// with the override (as a tools file's agent "approval" does). Approve
	// still decides first; its ByTool is the override. Default nil: each
	// tool's own Approval.
	ToolApproval map[string]Decision
	// NoStart keeps runs from naming this agent at their start: only the
	// calls of other agents run it (and, for the first agent, the runs that
	// name none). Default false: a run may name it.
	NoStart bool
}

// Config is what Register needs: the agents a worker runs and where it
// keeps what it must not lose. The zero values of the optional fields are
// the defaults.
type Config struct {
	// Agents are the agents runs may name at their start (but for NoStart
	// ones) and call. The first is the default: the agent of a run that
	// names none. At least one.
	Agents []Agent
	// Journal is a folder that every worker of the task queue shares (one
	// host's disk, or a network file system with working fsync): the write
	// guard's journal in its "temporal" folder, large values and
	// conversations in its "content" folder, as the agentrun programs lay
	// it out (AGENTRUN_JOURNAL), so `reconcile` reads the same. Required
	// unless Guard and Content are both set.
	Journal string
	// Guard is the store of the write guard's records (a PostgreSQL one
	// from package postgres, or your own). Default: a file journal under
	// Journal.
	Guard journal.Store
	// Content keeps large values and conversations. Default: a file store
	// under Journal.
	Content content.Store
	// Logger gets the activities' lines. Default slog.Default().
	Logger *slog.Logger
	// Metrics records the steps, their latency, tokens and approvals
	// (package metrics, over any OpenTelemetry meter provider). Default
	// nil: nothing recorded.
	Metrics *metrics.Recorder
	// Tracer records a span per step attempt with the OpenTelemetry GenAI
	// conventions' attributes. Default nil: no spans.
	Tracer trace.Tracer
	// CaptureContent puts prompt, completion and tool text on Tracer's
	// spans. Leave it off when payloads are encrypted (package codec): the
	// spans would carry the text in the clear. Default false.
	CaptureContent bool
	// NoStream keeps the model steps from publishing their text to their
	// run's stream while the model writes it, whatever the run asks.
	// Default false: runs that ask stream.
	NoStream bool
	// DataConverter is the data converter of the worker's Temporal client
	// (package codec's, when payloads are encrypted): a fork reads its
	// origin's history with it. Default converter.GetDefaultDataConverter().
	DataConverter converter.DataConverter
	// Metrics, Tracer, CaptureContent, NoStream and DataConverter are
	// Register's; NewLocal does not read them.

	// program is how agentrun's own programs run (frontdoor.Attach): nil
	// for every other Config.
	program *frontdoor.Program
}

func init() {
	frontdoor.Attach = func(cfg any, p *frontdoor.Program) any {
		c := cfg.(Config)
		c.program = p
		return c
	}
}

// maxAgentDepth bounds how deeply agents may call agents: a run that calls
// an agent is depth 1 (as in the programs' tools file, whose agent_depth
// the programs' Config takes instead: frontdoor.Program.AgentDepth).
const maxAgentDepth = tools.DefaultAgentDepth

// validate checks the configuration as a whole; each error is one line
// naming the field, what was wrong and what is valid.
func (c Config) validate() error {
	if len(c.Agents) == 0 {
		return errors.New("agentrun.Config: Agents is empty; give at least one agent (the first is the default)")
	}
	if c.Journal == "" && (c.Guard == nil || c.Content == nil) {
		return errors.New("agentrun.Config: Journal is empty; name a folder every worker of the task queue shares, or set both Guard and Content")
	}
	depth := maxAgentDepth
	if p := c.program; p != nil && p.AgentDepth > 0 {
		depth = p.AgentDepth
	}
	byName := map[string]Agent{}
	toolNames := map[string]string{} // tool name → the first agent offering it
	toolsByName := map[string]tools.Tool{}
	for i, a := range c.Agents {
		switch {
		case !agent.ValidToolName(a.Name):
			return fmt.Errorf("agentrun.Config: Agents[%d].Name %q is not 1 to 64 letters, digits, '_' or '-'", i, a.Name)
		case a.Model == nil:
			return fmt.Errorf("agentrun.Config: agent %q has no Model", a.Name)
		}
		if _, dup := byName[a.Name]; dup {
			return fmt.Errorf("agentrun.Config: agent %q is defined twice", a.Name)
		}
		byName[a.Name] = a
		for _, t := range a.Tools {
			if t == nil {
				return fmt.Errorf("agentrun.Config: agent %q has a nil tool", a.Name)
			}
			name := t.Spec().Name
			if other, ok := toolsByName[name]; ok && !sameTool(other, t) {
				return fmt.Errorf("agentrun.Config: agents %q and %q have different tools named %q; a name is one tool on a worker", toolNames[name], a.Name, name)
			}
			if _, ok := toolNames[name]; !ok {
				toolNames[name], toolsByName[name] = a.Name, t
			}
		}
		if err := checkProbes(a); err != nil {
			return err
		}
		if err := checkParameters(a); err != nil {
			return err
		}
	}
	for _, a := range c.Agents {
		for _, sub := range a.Agents {
			s, ok := byName[sub]
			switch {
			case !ok:
				return fmt.Errorf("agentrun.Config: agent %q calls agent %q, which is not in Agents (%s)", a.Name, sub, strings.Join(slices.Sorted(maps.Keys(byName)), ", "))
			case s.Description == "":
				return fmt.Errorf("agentrun.Config: agent %q is called by agent %q and has no Description; tell the calling model what it does", sub, a.Name)
			}
			if owner, clash := toolNames[sub]; clash {
				return fmt.Errorf("agentrun.Config: agent %q calls agent %q, and agent %q has a tool of that name; a name is one tool on a worker", a.Name, sub, owner)
			}
		}
		if err := checkToolApproval(a); err != nil {
			return err
		}
		if path := agentPath(byName, a.Name, nil, depth); len(path) > depth+1 || hasCycle(path) {
			return fmt.Errorf("agentrun.Config: agents call each other too deeply or in a cycle: %s (at most %d levels)", strings.Join(path, " → "), depth)
		}
	}
	return nil
}

// checkParameters checks that a's Parameters, when set, is an object
// schema.
func checkParameters(a Agent) error {
	if a.Parameters == nil {
		return nil
	}
	var schema map[string]any
	if json.Unmarshal(a.Parameters, &schema) != nil || schema["type"] != "object" {
		return fmt.Errorf("agentrun.Config: agent %q: Parameters is not an object schema; want a JSON Schema such as {\"type\":\"object\",\"properties\":{...}}", a.Name)
	}
	return nil
}

// checkToolApproval checks that each of a's ToolApproval names one of its
// tools or agents and is Ask, Allow or Deny.
func checkToolApproval(a Agent) error {
	for _, name := range slices.Sorted(maps.Keys(a.ToolApproval)) {
		d := a.ToolApproval[name]
		mine := slices.Contains(a.Agents, name) || slices.ContainsFunc(a.Tools, func(t tools.Tool) bool { return t.Spec().Name == name })
		switch {
		case !mine:
			return fmt.Errorf("agentrun.Config: agent %q: ToolApproval names %q, which is none of its Tools or Agents", a.Name, name)
		case d != Ask && d != Allow && d != Deny:
			return fmt.Errorf("agentrun.Config: agent %q: ToolApproval[%q] is %q; want Ask, Allow or Deny", a.Name, name, d)
		}
	}
	return nil
}

// checkProbes checks the probe of each of a's writes that has one against
// a's tools: the probe calls a read tool of the same agent.
func checkProbes(a Agent) error {
	for _, t := range a.Tools {
		spec := t.Spec()
		if spec.Probe == nil {
			continue
		}
		if err := tools.CheckProbeTool(*spec.Probe, a.Tools); err != nil {
			return fmt.Errorf("agentrun.Config: agent %q: the probe of write %s: %v", a.Name, spec.Name, err)
		}
	}
	return nil
}

// agentPath returns the longest chain of calls from agent name (itself
// first), stopping at the first repeated name or past depth levels.
func agentPath(byName map[string]Agent, name string, path []string, depth int) []string {
	path = append(slices.Clone(path), name)
	if slices.Contains(path[:len(path)-1], name) || len(path) > depth+1 {
		return path
	}
	longest := path
	for _, sub := range byName[name].Agents {
		if p := agentPath(byName, sub, path, depth); len(p) > len(longest) {
			longest = p
		}
	}
	return longest
}

func hasCycle(path []string) bool {
	seen := map[string]bool{}
	for _, n := range path {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// sameTool reports whether a and b are one tool (the same pointer, or
// equal comparable values).
func sameTool(a, b tools.Tool) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}
