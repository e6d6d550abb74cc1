package execute

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentrun/agentrun/llm"
)

// Agent returns the executor of a run of the named agent: a named agent's
// own (Named), or for an agent tool, the
// agent's tools (tools.Set.Agent) and its model (Models, or this
// executor's when the agent names none), with this executor's store and
// settings. It is made once per name.
func (e *Executor) Agent(name string) (*Executor, error) {
	if name == "" {
		return e, nil
	}
	if sub, ok := e.Named[name]; ok {
		return sub, nil
	}
	e.agentMu.Lock()
	defer e.agentMu.Unlock()
	if sub, ok := e.agents[name]; ok {
		return sub, nil
	}
	set, err := e.Tools.Agent(name)
	if err != nil {
		return nil, err
	}
	model := e.Model
	if spec := e.Tools.Agents()[name].Model; spec != "" {
		if model = e.Models[name]; model == nil {
			return nil, fmt.Errorf("agent %q names the model %q, which this worker did not build", name, spec)
		}
	}
	sub := &Executor{Model: model, Tools: set, Content: e.Content, ContextBudget: e.ContextBudget, ModelTimeout: e.ModelTimeout,
		FailOnCut: e.FailOnCut, FailOnEmpty: e.FailOnEmpty, Logger: e.Logger}
	c := e.caches()
	sub.once.Do(func() { sub.cache = c })
	if e.agents == nil {
		e.agents = map[string]*Executor{}
	}
	e.agents[name] = sub
	return sub, nil
}

// BuildModels builds the model of every agent tool that names one (agents:
// by agent name, the model spec) with build (the programs'
// providers.New): the Models of an executor over those tools. An agent
// whose model cannot be built is an error naming it.
func BuildModels(agents map[string]string, build func(spec string) (llm.Provider, error)) (map[string]llm.Provider, error) {
	out := map[string]llm.Provider{}
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		spec := agents[name]
		if spec == "" {
			continue
		}
		p, err := build(spec)
		if err != nil {
			return nil, fmt.Errorf("agents[%q].model: %w", name, err)
		}
		out[name] = p
	}
	return out, nil
}
