package frontdoor

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// Program is how the programs' worker runs its one agent, the default of
// its Config (Config.Agents[0], which names no tools of its own): with the
// tools of the environment's tools file, whose agents are agent tools that
// only a run's calls start, never a client (no agent may be named at a
// run's start), and with the environment's executor settings (execute.Executor
// documents each).
type Program struct {
	// Tools are the default agent's tools: the demo tools, the MCP
	// servers' and the tools file's agents (tools.Open). Required.
	Tools *tools.Set
	// Models are the models of the tools file's agents that name one.
	Models map[string]llm.Provider
	// ContextBudget, ModelTimeout, LimitWait, FailOnCut and FailOnEmpty
	// are the executor's settings of the same names.
	ContextBudget           int
	ModelTimeout, LimitWait time.Duration
	FailOnCut, FailOnEmpty  bool
	// LegacyNames registers the activities under the names of builds
	// before their "agentrun." prefix too (activities.LegacyNames), so the
	// worker takes over runs such a build started.
	LegacyNames bool
	// Workflow is registered in place of workflows.AgentRun when not nil:
	// the test-only breaking change (package internal/testhook/wfchange).
	Workflow func(workflow.Context, workflows.Input) (workflows.Result, error)
}

// Attach returns a copy of cfg, an agentrun.Config, that registers as p
// says. Package agentrun sets it in its init; cfg of another type panics.
var Attach func(cfg any, p *Program) any
