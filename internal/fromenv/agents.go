package fromenv

import (
	"maps"
	"slices"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/frontdoor"
)

// Agents returns the programs' agents over exec (Executor's): first their
// default agent, named AgentName (or, when the tools file has an agent of
// that name, AgentName with '_' added until it is free), with exec's model
// and every tool of exec.Tools, the file's agents among them; then each of
// the tools file's agents, by name, with its model (exec.Models, or exec's
// when it names none), parameters, system prompt, tools and approval
// overrides. No run may name any of them at its start (NoStart): a run runs
// the default agent, and only its calls run the others, as before they were
// agentrun.Agents. p gets the order of each agent's tools as the file lists
// them (frontdoor.Program.ToolOrder), so that the catalogs are the ones
// older builds listed.
func Agents(exec *execute.Executor, p *frontdoor.Program) []agentrun.Agent {
	file := exec.Tools.Agents()
	root := agentrun.Agent{Name: AgentName, Model: exec.Model, NoStart: true}
	for file[root.Name].Name != "" {
		root.Name += "_"
	}
	// The default agent's tools are the set's, in its order: the offered
	// tools, then the file's agents by name (tools.Open).
	for _, spec := range exec.Tools.Specs() {
		if spec.Agent {
			root.Agents = append(root.Agents, spec.Name)
			continue
		}
		t, _ := exec.Tools.Lookup(spec.Name)
		root.Tools = append(root.Tools, t)
	}
	out := []agentrun.Agent{root}
	p.ToolOrder = map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(file)) {
		f := file[name]
		a := agentrun.Agent{Name: name, Description: f.Description, Parameters: f.Parameters, Model: exec.Model, System: f.System, NoStart: true}
		if f.Model != "" {
			a.Model = exec.Models[name] // Executor built it
		}
		for _, n := range f.Tools {
			if _, isAgent := file[n]; isAgent {
				a.Agents = append(a.Agents, n)
			} else if t, ok := exec.Tools.Lookup(n); ok {
				a.Tools = append(a.Tools, t)
			}
		}
		for n, v := range f.Approval {
			if a.ToolApproval == nil {
				a.ToolApproval = map[string]agentrun.Decision{}
			}
			a.ToolApproval[n] = agentrun.Decision(v)
		}
		p.ToolOrder[name] = slices.Clone(f.Tools)
		out = append(out, a)
	}
	return out
}
