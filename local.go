package agentrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// ErrUnknownAgent: a run names an agent that is not in the Config's Agents
// (the local engine's; a Temporal run fails at its start instead).
var ErrUnknownAgent = errors.New("unknown agent")

// Local runs the agents of a Config on the local engine (package local):
// in this process, with no Temporal server, over the journal folder
// Config.Journal, fsynced, in which each run has a journal file
// (<Journal>/<run id>.jsonl) as the agentrun programs keep them (the
// reconcile program lists them under the same AGENTRUN_JOURNAL, but shows
// and operates only runs of the agents its own tools file defines: operate
// these through LocalRun, in a program that has their agents). A crash
// loses nothing: a run resumes from its journal without calling a model or
// a tool twice for one step, and a write whose outcome is unknown waits as
// Indeterminate for a person ([LocalRun.Done], [LocalRun.Retry]).
//
// Its runs ([LocalRun]) have the methods of a Temporal [Run], with the same
// types and errors ([Operator]); they are driven by the process that asks:
// [Local.Start] and [LocalRun.Resume] drive a run until it ends or waits
// for a person, [LocalRun.Wait] until it ends. One process drives a run at
// a time (another gets a *journal.BusyError); any may operate on it.
type Local struct {
	store  *journal.FileStore
	agents map[string]localAgent
	first  string
	names  string // the agents' names, for errors
	logger *slog.Logger
}

// localAgent is one agent of the Config: its executor and its loop.
type localAgent struct {
	exec *execute.Executor
	loop agent.Loop
}

// NewLocal returns the local engine of cfg's agents. It checks cfg as
// [Register] does, with the same one-line errors; the local engine keeps
// its journals in the folder Journal, which it needs (Guard, the Temporal
// write guard's store, is not used), and the content in Content or the
// folder's "content" folder.
func NewLocal(cfg Config) (*Local, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Journal == "" {
		return nil, errors.New("agentrun.Config: Journal is empty; the local engine keeps its runs' journals in a folder: name one (Guard is the Temporal write guard's store, which it does not use)")
	}
	_, named, logger, err := cfg.executors()
	if err != nil {
		return nil, err
	}
	store, err := journal.NewFileStore(cfg.Journal)
	if err != nil {
		return nil, fmt.Errorf("agentrun.Config.Journal: %w", err)
	}
	store.Logger = logger
	l := &Local{store: store, agents: map[string]localAgent{}, first: cfg.Agents[0].Name, logger: logger}
	var names []string
	for _, a := range cfg.Agents {
		e := named[a.Name]
		l.agents[a.Name] = localAgent{exec: e, loop: agent.Loop{Tools: e.Tools.Specs(), FailOnCut: e.FailOnCut, FailOnEmpty: e.FailOnEmpty}}
		names = append(names, a.Name)
	}
	l.names = strings.Join(names, ", ")
	return l, nil
}

// child is the agent of a child run (an agent calling another as a tool),
// for the engine (local.Engine.Agents).
func (l *Local) child(name string) (local.Agent, error) {
	a, ok := l.agents[name]
	if !ok {
		return local.Agent{}, fmt.Errorf("%w %q: want one of Config.Agents (%s)", ErrUnknownAgent, name, l.names)
	}
	return local.Agent{Loop: a.loop, Exec: a.exec, System: a.exec.System}, nil
}

// engine returns the engine of the runs of the agent name; "" is the first
// agent's for a run that recorded none (one the programs started).
func (l *Local) engine(name string) (*local.Engine, localAgent) {
	a := l.agents[cmp.Or(name, l.first)]
	return &local.Engine{Store: l.store, Loop: a.loop, Probe: a.exec.Probe, Agents: l.child, Agent: name,
		// Model calls and reads that fail are retried as on Temporal.
		Retry:   execute.StepRetry,
		OnRetry: func(r local.Retrying) { l.logger.Warn("retrying a step", "run", r.RunID, "retry", r.String()) },
	}, a
}

// Start starts a run of opts.Agent (default the first of Config.Agents)
// and drives it, in this goroutine, until it ends or waits for a person;
// then it returns the run, whose [LocalRun.State] says which. Its options
// are checked as [Client.Start] checks them (Stream is not used: the local
// engine has no stream). A run id is used once: Start returns an error
// matching ErrRunExists when the journal has a run of that id, and
// [Local.Run] reaches it. A model call or read that fails is tried again
// as on Temporal (with backoff, while the failure is transient); one that
// fails for good stops the run (a *local.StoppedError), beside which the
// run is returned: its journal keeps what was done, and [LocalRun.Resume]
// goes on from there.
func (l *Local) Start(ctx context.Context, opts StartOptions) (*LocalRun, error) {
	in, err := opts.input()
	if err != nil {
		return nil, err
	}
	name := cmp.Or(opts.Agent, l.first)
	a, ok := l.agents[name]
	if !ok || (opts.Agent != "" && a.exec.NoStart) {
		return nil, fmt.Errorf("start run %s: %w %q: want one of Config.Agents (%s) that runs may name at their start (not NoStart), or \"\" for the first", opts.ID, ErrUnknownAgent, name, l.names)
	}
	recs, err := l.store.Load(opts.ID)
	if err != nil {
		return nil, fmt.Errorf("start run %s: %w", opts.ID, err)
	}
	if len(recs) > 0 {
		return nil, fmt.Errorf("start run %s: %w; choose another id, or reach it with Local.Run", opts.ID, ErrRunExists)
	}
	msgs := in.Messages
	if sys := a.exec.System; sys != "" {
		msgs = append([]Message{{Role: agent.RoleSystem, Content: sys}}, msgs...)
	}
	e, _ := l.engine(name)
	e.Limits = Budget{MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens, MaxCost: in.MaxCost}
	if opts.Session {
		e.Session = cmp.Or(opts.SessionIdle, workflows.DefaultSessionIdle)
	}
	run := l.Run(opts.ID)
	if _, err := run.drive(ctx, e, a, msgs); err != nil {
		return run, err
	}
	return run, nil
}

// Run is a handle on the local run runID. It checks nothing: a run that
// does not exist is ErrRunNotFound when the handle is used.
func (l *Local) Run(runID string) *LocalRun { return &LocalRun{l: l, id: runID} }

// LocalRun is a handle on one run of the local engine (see [Local.Run]):
// the methods of a Temporal [Run], and Resume.
type LocalRun struct {
	l  *Local
	id string
}

// ID is the run id.
func (r *LocalRun) ID() string { return r.id }

// Resume drives the run on, in this goroutine, from where its journal
// stands, until it ends or waits for a person (after an approval, a
// settled write, a raised budget): the Result's Status is then
// AwaitingApproval, Indeterminate, BudgetExceeded or Idle, with Reason.
// A run that ended returns how it ended. A child run is driven by its top
// run: Resume it.
func (r *LocalRun) Resume(ctx context.Context) (Result, error) {
	return r.resume(ctx, false)
}

// Wait drives the run on, in this goroutine, until it ends, as [Run.Wait]
// waits: where it waits for a person, it waits for the person's input
// (from another goroutine, or another process with a Local over the same
// folder) and goes on. A run that Failed or was Cancelled is no error: Status and Reason say
// so. The error is ErrRunNotFound for an unknown run, or the one that kept
// it from the end (ctx's, a step's).
func (r *LocalRun) Wait(ctx context.Context) (Result, error) {
	return r.resume(ctx, true)
}

func (r *LocalRun) resume(ctx context.Context, follow bool) (Result, error) {
	e, a, recs, err := r.l.of(r.id)
	if err != nil {
		return Result{}, err
	}
	e.Follow = follow
	return r.drive(ctx, e, a, recs[0].Input)
}

// drive drives the run on e with input and returns where it stands.
func (r *LocalRun) drive(ctx context.Context, e *local.Engine, a localAgent, input []Message) (Result, error) {
	o, err := e.Drive(ctx, r.id, input, a.exec)
	var stopped *local.FollowStoppedError
	switch {
	case errors.As(err, &stopped):
		return Result{}, fmt.Errorf("wait for run %s: %w", r.id, err)
	case err != nil:
		return Result{}, fmt.Errorf("drive run %s: %w", r.id, err)
	}
	res := Result{Status: o.Status, Answer: o.Answer, Reason: o.Reason, CutOff: o.CutOff, Empty: o.Empty}
	if info, err := e.Show(r.id); err == nil {
		res.Usage = info.Usage
		for _, s := range info.Steps {
			if s.State == "completed" {
				res.Steps++
			}
		}
	}
	return res, nil
}

// of returns the engine and agent of the existing run runID, with its
// journal: a run of the agent it recorded, or, for a child run, the
// engine that routes to it (the top agent's).
func (l *Local) of(runID string) (*local.Engine, localAgent, []journal.Record, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, localAgent{}, nil, err
	}
	recs, err := l.store.Load(runID)
	if err != nil {
		return nil, localAgent{}, nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if len(recs) == 0 || recs[0].Type != journal.RunStarted {
		return nil, localAgent{}, nil, fmt.Errorf("run %s not found: %w", runID, ErrRunNotFound)
	}
	name := recs[0].Agent
	if recs[0].Parent != "" {
		name = "" // the engine's Agents reach it (local.Engine's child runs)
	} else if _, ok := l.agents[name]; name != "" && !ok {
		return nil, localAgent{}, nil, fmt.Errorf("run %s runs agent %q: %w; want one of Config.Agents (%s)", runID, name, ErrUnknownAgent, l.names)
	}
	e, a := l.engine(name)
	return e, a, recs, nil
}
