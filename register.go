package agentrun

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/frontdoor"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// WorkflowName is the workflow type of an agent run: what a client starts
// and the Web UI lists.
const WorkflowName = workflows.WorkflowName

// Register registers the agent-run workflow and its activities on r (a
// worker.Worker, beside your own workflows and activities), for the agents
// of cfg. Its activities' names begin with "agentrun.", so none collides
// with yours. It checks cfg first and registers nothing when it is wrong:
// the error is one line naming the field.
//
// The runs' search attributes must exist in the namespace before a run
// starts: call EnsureSearchAttributes once (it is idempotent), or create
// them as its error says.
func Register(r worker.Registry, cfg Config) error {
	acts, err := cfg.activities()
	if err != nil {
		return err
	}
	wf, legacy := workflows.AgentRun, false
	if p := cfg.program; p != nil {
		if p.Workflow != nil {
			wf = p.Workflow
		}
		legacy = p.LegacyNames
	}
	r.RegisterWorkflowWithOptions(wf, workflows.RegisterOptions)
	activities.Register(r, acts, legacy)
	return nil
}

// EnsureSearchAttributes creates the search attributes agent runs set
// (their status and their step) in namespace where they are missing; it
// does nothing when they exist. Where the client may not create them (a
// Temporal Cloud namespace), the error names the missing ones and the
// command that creates them.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	return workflows.EnsureSearchAttributes(ctx, c, namespace)
}

// activities builds the activities of cfg's agents.
func (cfg Config) activities() (*activities.Activities, error) {
	root, _, logger, err := cfg.executors()
	if err != nil {
		return nil, err
	}
	guard := cfg.Guard
	if guard == nil {
		fs, err := journal.NewFileStore(filepath.Join(cfg.Journal, "temporal"))
		if err != nil {
			return nil, fmt.Errorf("agentrun.Config.Journal: %w", err)
		}
		fs.Logger = logger
		guard = fs
	}
	return &activities.Activities{
		Exec: root, Guard: &journal.Guard{Store: guard, Probe: root.Probe}, Logger: logger,
		Metrics: cfg.Metrics, Tracer: cfg.Tracer, Capture: cfg.CaptureContent, NoStream: cfg.NoStream, Converter: cfg.DataConverter,
	}, nil
}

// executors checks cfg and builds the executors of its agents: named, by
// name, and root, the default agent's, which holds them (Named). logger is
// cfg's, or slog.Default().
func (cfg Config) executors() (root *execute.Executor, named map[string]*execute.Executor, logger *slog.Logger, err error) {
	if err := cfg.validate(); err != nil {
		return nil, nil, nil, err
	}
	logger = cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	store := cfg.Content
	if store == nil {
		fs, err := content.NewFileStore(filepath.Join(cfg.Journal, "content"))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("agentrun.Config.Journal: %w", err)
		}
		store = fs
	}
	if p := cfg.program; p != nil {
		root = cfg.programExecutor(p, store, logger)
		return root, map[string]*execute.Executor{cfg.Agents[0].Name: root}, logger, nil
	}
	byName := map[string]Agent{}
	for _, a := range cfg.Agents {
		byName[a.Name] = a
	}
	// set returns a's tools, its agents' among them. Each executor gets a
	// set of its own: a set's binding names the agent a run of it runs.
	set := func(a Agent) (*tools.Set, error) {
		ts := append([]tools.Tool(nil), a.Tools...)
		for _, sub := range a.Agents {
			ts = append(ts, tools.AgentTool(tools.Agent{Name: sub, Description: byName[sub].Description}))
		}
		s, err := tools.NewSet(ts...)
		if err == nil {
			err = activities.CheckWriteTimeouts(s)
		}
		if err != nil {
			return nil, fmt.Errorf("agentrun.Config: agent %q: %w", a.Name, err)
		}
		return s, nil
	}
	named = make(map[string]*execute.Executor, len(cfg.Agents))
	for _, a := range cfg.Agents {
		s, err := set(a)
		if err != nil {
			return nil, nil, nil, err
		}
		named[a.Name] = &execute.Executor{Model: a.Model, Tools: s, Content: store, System: a.System, Approve: rule(a.Name, a.Approve, logger), Logger: logger}
	}
	// The default agent's executor: a run that names no agent runs it.
	first := cfg.Agents[0]
	s, err := set(first)
	if err != nil {
		return nil, nil, nil, err
	}
	root = &execute.Executor{Model: first.Model, Tools: s, Content: store, System: first.System, Approve: rule(first.Name, first.Approve, logger), Logger: logger, Named: named}
	return root, named, logger, nil
}

// programExecutor is the executor of the programs' one agent (p): the
// default agent's model and system prompt over p's tools, whose agents
// only a run's calls start (no Named agents: a run names none at its
// start), with p's settings.
func (cfg Config) programExecutor(p *frontdoor.Program, store content.Store, logger *slog.Logger) *execute.Executor {
	a := cfg.Agents[0]
	return &execute.Executor{
		Model: a.Model, Models: p.Models, Tools: p.Tools, Content: store, System: a.System,
		Approve: rule(a.Name, a.Approve, logger), Logger: logger,
		ContextBudget: p.ContextBudget, ModelTimeout: p.ModelTimeout, LimitWait: p.LimitWait,
		FailOnCut: p.FailOnCut, FailOnEmpty: p.FailOnEmpty,
	}
}
