package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
)

var _ forker = (*Local)(nil)

// fork forks the run a names on the local engine and drives the fork until
// it ends or waits for a person, printing where it stands (and, for a
// replay, how it departs from its origin).
func (l *Local) fork(ctx context.Context, w io.Writer, a forkArgs) error {
	f, err := a.ask(a.Origins[0])
	if err != nil {
		return err
	}
	id := a.ID
	if id == "" {
		id = agent.ForkID(f)
	}
	exec, err := l.forkExec(ctx, f)
	if err != nil {
		return err
	}
	l.Engine.Retry = l.Retry
	l.Engine.OnRetry = func(r local.Retrying) { fmt.Fprintln(w, r.String()) }
	o, err := l.Engine.Fork(ctx, id, f, exec)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: a fork of run %s from %s\n", id, f.Origin, f.From)
	printOutcome(w, l.op(), id, o)
	if f.Replay {
		if d, err := l.Engine.Drift(id); err == nil {
			fmt.Fprintln(w, d.String())
		}
	}
	return outcomeErr(o)
}

// eval replays each run a names from a's step onto a's agent or model and
// prints its drift, then a summary. A run already replayed so (the fork of
// the same id asks the same) is reported, not run again.
func (l *Local) eval(ctx context.Context, w io.Writer, a forkArgs) error {
	var sum evalSummary
	for _, origin := range a.Origins {
		f, _ := a.ask(origin)
		d, n, err := l.evalOne(ctx, agent.ForkID(f), f)
		sum.add(w, origin, d, n, err)
	}
	return sum.print(w, len(a.Origins))
}

// evalOne replays one run as the fork id (unless it exists already, asking
// the same) and returns its drift and the tool steps it ran (0: every
// tool step of a replay is answered from the record).
func (l *Local) evalOne(ctx context.Context, id string, f agent.Fork) (agent.Drift, int, error) {
	recs, err := l.Engine.Store.Load(id)
	if err != nil {
		return agent.Drift{}, 0, err
	}
	if len(recs) == 0 || recs[0].Fork == nil || !sameAsk(recs[0].Fork.Ask, f) {
		exec, err := l.forkExec(ctx, f)
		if err != nil {
			return agent.Drift{}, 0, err
		}
		l.Engine.Retry = l.Retry
		if _, err := l.Engine.Fork(ctx, id, f, exec); err != nil {
			return agent.Drift{}, 0, err
		}
	}
	d, err := l.Engine.Drift(id)
	if err != nil {
		return agent.Drift{}, 0, err
	}
	info, err := l.Engine.Show(id)
	if err != nil {
		return agent.Drift{}, 0, err
	}
	ran := 0
	for _, s := range info.Steps {
		if s.Kind != agent.KindModel && s.Replayed == "" {
			ran++
		}
	}
	return d, ran, nil
}

// sameAsk reports whether two forks ask the same.
func sameAsk(a, b agent.Fork) bool {
	return a.Origin == b.Origin && a.From == b.From && a.Agent == b.Agent && a.Model == b.Model && a.Replay == b.Replay &&
		a.AckWrites == b.AckWrites && (a.System == nil) == (b.System == nil) && (a.System == nil || *a.System == *b.System)
}

// forkExec is the executor of a fork's live steps: the program's, with
// f.Model's model when it names one; nil for a fork onto an agent (the
// engine takes the agent's).
func (l *Local) forkExec(ctx context.Context, f agent.Fork) (agent.Executor, error) {
	switch {
	case f.Agent != "":
		return nil, nil
	case f.Model == "":
		return l.Exec, nil
	case l.model == nil:
		return nil, fmt.Errorf("fork --model %s: this program builds no models", f.Model)
	}
	m, err := l.model(ctx, f.Model)
	if err != nil {
		return nil, usagef("fork --model: %v", err)
	}
	return withModel(l.Exec, m), nil
}

// withModel is an executor like e with model m.
func withModel(e *execute.Executor, m llm.Provider) *execute.Executor {
	return &execute.Executor{Model: m, Models: e.Models, Tools: e.Tools, Content: e.Content, ContextBudget: e.ContextBudget, ModelTimeout: e.ModelTimeout,
		LimitWait: e.LimitWait, FailOnCut: e.FailOnCut, FailOnEmpty: e.FailOnEmpty, Logger: e.Logger, System: e.System, Approve: e.Approve, Named: e.Named}
}

// resumeExec is the executor that resumes runID: the program's, or, for a
// fork onto another model, one with the model its run.started records.
func (l *Local) resumeExec(ctx context.Context, runID string) (*execute.Executor, error) {
	recs, err := l.Engine.Store.Load(runID)
	if err != nil || len(recs) == 0 || recs[0].Type != journal.RunStarted || recs[0].Fork == nil || recs[0].Fork.Ask.Model == "" {
		return l.Exec, nil // the drive reports what is wrong
	}
	exec, err := l.forkExec(ctx, recs[0].Fork.Ask)
	if err != nil {
		return nil, err
	}
	e, ok := exec.(*execute.Executor)
	if !ok {
		return nil, errors.New("fork: its executor is not the program's")
	}
	return e, nil
}
