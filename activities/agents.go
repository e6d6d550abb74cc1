package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/agentrun/agentrun/execute"
)

// Child runs: the activities of a run of an agent tool use that agent's
// executor (execute.Executor.Agent): its model and its tools.

// forAgent returns the activities of a run of the named agent ("" for a
// top-level run: a itself). An agent this worker does not have refuses the
// step.
func (a *Activities) forAgent(name, step string) (*Activities, error) {
	if name == "" {
		return a, nil
	}
	ex, err := a.Exec.Agent(name)
	if err != nil {
		return nil, refused("step %s belongs to a run of agent %q: %v", step, name, err)
	}
	sub := *a
	sub.Exec = ex
	sub.agent, sub.system = name, cmp.Or(ex.System, a.Exec.Tools.Agents()[name].System)
	return &sub, nil
}

// ListAgentToolsAtStart is ListAgentTools for a run that names its agent
// at its start, with no parent run: only an agent the worker lets runs
// start with (execute.Executor.Named, not NoStart) is listed. Any other is
// refused: an agent that only calls run may have approval overrides meant
// for the calls of a run that called it, never for a client's start.
func (a *Activities) ListAgentToolsAtStart(ctx context.Context, name string) (Catalog, error) {
	if sub, ok := a.Exec.Named[name]; !ok || sub.NoStart {
		return Catalog{}, refused("the run names agent %q at its start; the agents a run may start with are: %s", name, startable(a.Exec.Named))
	}
	return a.ListAgentTools(ctx, name)
}

// startable lists the names of the agents a run may start with.
func startable(m map[string]*execute.Executor) string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(m)) {
		if !m[n].NoStart {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none (start the run without one: it runs this worker's default agent)"
	}
	return strings.Join(names, ", ")
}

// ListAgentTools is ListTools for a child run of the named agent tool: its
// model, its tools (with the agent's approval overrides) and its system
// prompt, all from this worker's own tools file.
func (a *Activities) ListAgentTools(ctx context.Context, name string) (Catalog, error) {
	sub, err := a.forAgent(name, "tools")
	if err != nil {
		return Catalog{}, err
	}
	var c Catalog
	_, err = sub.heartbeating(ctx, "tools", func(ctx context.Context) (json.RawMessage, error) {
		if err := a.holdList(ctx); err != nil { // a test-only crash point; inert unless set
			return nil, err
		}
		var err error
		c, err = sub.listTools(ctx)
		return nil, err
	})
	c.Agent, c.System = sub.agent, sub.system
	return c, err
}
