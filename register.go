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

// ErrForkAttributeMissing: see [EnsureSearchAttributes].
var ErrForkAttributeMissing = workflows.ErrForkAttributeMissing

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
//
// When only AgentRunForkOf (which forks carry) is missing and cannot be
// created, the error matches ErrForkAttributeMissing: runs work, and
// [Client.Fork] fails until it exists.
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
	byName := map[string]Agent{}
	for _, a := range cfg.Agents {
		byName[a.Name] = a
	}
	var p frontdoor.Program // the programs' settings; the zero value for every other Config
	if cfg.program != nil {
		p = *cfg.program
	}
	// executor returns a's executor over a set of its own (a set's binding
	// names the agent a run of it runs).
	executor := func(a Agent) (*execute.Executor, error) {
		s, err := toolSet(a, byName, p.ToolOrder[a.Name])
		if err == nil {
			err = activities.CheckWriteTimeouts(s)
		}
		if err != nil {
			return nil, fmt.Errorf("agentrun.Config: agent %q: %w", a.Name, err)
		}
		return &execute.Executor{Model: a.Model, Tools: s, Content: store, System: a.System, Approve: rule(a.Name, a.Approve, logger), Logger: logger,
			NoStart: a.NoStart, ContextBudget: p.ContextBudget, ModelTimeout: p.ModelTimeout, LimitWait: p.LimitWait, FailOnCut: p.FailOnCut, FailOnEmpty: p.FailOnEmpty}, nil
	}
	named = make(map[string]*execute.Executor, len(cfg.Agents))
	for _, a := range cfg.Agents {
		if named[a.Name], err = executor(a); err != nil {
			return nil, nil, nil, err
		}
	}
	// The default agent's executor: a run that names no agent runs it.
	if root, err = executor(cfg.Agents[0]); err != nil {
		return nil, nil, nil, err
	}
	root.Named = named
	return root, named, logger, nil
}

// toolSet returns a's tools, the agents it calls among them, with its
// ToolApproval applied: its Tools, then its Agents, or in the order that
// order names them (frontdoor.Program.ToolOrder).
func toolSet(a Agent, byName map[string]Agent, order []string) (*tools.Set, error) {
	ts := append([]tools.Tool(nil), a.Tools...)
	for _, sub := range a.Agents {
		s := byName[sub]
		ts = append(ts, tools.AgentTool(tools.Agent{Name: sub, Description: s.Description, Parameters: s.Parameters}))
	}
	if order != nil {
		at := map[string]tools.Tool{}
		for _, t := range ts {
			at[t.Spec().Name] = t
		}
		ts = ts[:0]
		for _, n := range order {
			if t := at[n]; t != nil {
				ts, at[n] = append(ts, t), nil
			}
		}
		if len(ts) != len(at) {
			return nil, fmt.Errorf("the tool order %v does not name each of its tools and agents once", order)
		}
	}
	base, err := tools.NewSet(ts...)
	if err != nil || len(a.ToolApproval) == 0 {
		return base, err
	}
	for i, t := range ts {
		name := t.Spec().Name
		if d, ok := a.ToolApproval[name]; ok {
			// The tool's timeout stays its own: Apply would forget one
			// that the tool declares itself.
			ts[i] = tools.Apply(t, tools.Override{Approval: string(d), Timeout: base.Timeout(name)})
		}
	}
	return tools.NewSet(ts...)
}
