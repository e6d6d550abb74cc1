package frontdoor

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/workflows"
)

// Program is what the programs' worker registers beyond its Config's
// agents (the tools file's agents are agentrun.Agents of the Config): the
// environment's executor settings, which every agent of the Config runs
// with (execute.Executor documents each), and what keeps the runs of
// older builds going.
type Program struct {
	// ContextBudget, ModelTimeout, LimitWait, FailOnCut and FailOnEmpty
	// are the executor's settings of the same names, for every agent.
	// Default 0 and false: the executor's defaults.
	ContextBudget           int
	ModelTimeout, LimitWait time.Duration
	FailOnCut, FailOnEmpty  bool
	// AgentDepth is how deeply the agents may call each other (the tools
	// file's agent_depth). Default 0: the library's bound, three levels.
	AgentDepth int
	// ToolOrder lists, by agent, the names of its Tools and Agents in the
	// order its runs' catalogs list them: the tools file's order, which
	// may put an agent before a tool. A catalog in another order has
	// another key, and the runs that older builds started would be refused
	// their steps. Default: an agent not in it lists its Tools, then its
	// Agents.
	ToolOrder map[string][]string
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
