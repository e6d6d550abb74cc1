package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// Forks (agent.Fork). Fork reads the origin's journal in the engine's own
// Store, computes the fork point with the origin's loop (the input of its
// model call N, agent.ForkAt) and the writes a fork may make again
// (agent.WritesAfter, agent.ForkPoint.Gate), records them in the fork's
// run.started (journal.Forked) and drives the fork as any run. The fold of
// a fork starts from the point's checkpoint with the point's results as
// facts: they are no step records, so they count as no model call, token
// or cost, and its budget counts only its own model calls. Its steps keep
// the origin's numbering: a fork from llm/5 runs llm/5 live. A replay fork
// runs no tool: each call is answered from the origin's record
// (agent.Replay) and recorded as the step's result, marked Replayed, and
// no call waits for approval.

// ForkPreviewLen is how much of a write's result a hazard shows.
const ForkPreviewLen = 80

// Fork starts the run id as a fork of f.Origin and drives it as Drive
// does, returning where it stands. exec runs its live steps: the origin's
// agent's executor, with f.Model's model when the caller built one; nil
// with f.Agent set takes that agent's (Engine.Agents). Each refusal is one
// line and writes nothing: a malformed f or id, an unknown origin, one
// that has not ended (Completed, Failed or Cancelled), a step it never
// reached, an unknown agent, an id in use, or writes the fork may make
// again without f.AckWrites (a *agent.HazardError; a replay needs no
// acknowledgement, as it runs no tool).
func (j *Engine) Fork(ctx context.Context, id string, f agent.Fork, exec agent.Executor) (agent.Outcome, error) {
	fe, exec, input, err := j.StartFork(id, f, exec)
	if err != nil {
		return agent.Outcome{}, err
	}
	return fe.Drive(ctx, id, input, exec)
}

// StartFork is Fork without driving: it records the fork's run.started
// and returns the engine that drives it, its executor and its input, for
// Drive.
func (j *Engine) StartFork(id string, f agent.Fork, exec agent.Executor) (*Engine, agent.Executor, []agent.Message, error) {
	if err := f.Check(); err != nil {
		return nil, nil, nil, fmt.Errorf("%w %v", operator.ErrInvalid, err)
	}
	if err := operator.ValidRunID(id); err != nil {
		return nil, nil, nil, err
	}
	oe, recs, ost, err := j.origin(f)
	if err != nil {
		return nil, nil, nil, err
	}
	point, err := oe.forkPoint(f, ost)
	if err != nil {
		return nil, nil, nil, err
	}
	point.Hazards = agent.WritesAfter(f.From, oe.writes(f.Origin, ost, 0))
	if point, err = point.Gate(f); err != nil {
		return nil, nil, nil, err
	}
	fe, system := oe, (*string)(nil)
	if f.Agent != "" {
		c, a, err := j.child(f.Agent, "")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w fork of %s onto agent %s: %w", operator.ErrInvalid, f.Origin, f.Agent, err)
		}
		fe = c
		if exec == nil {
			exec = a.Exec
		}
		if a.System != "" {
			system = &a.System
		}
	}
	if f.System != nil {
		system = f.System
	}
	if exec == nil {
		return nil, nil, nil, fmt.Errorf("fork %s: no executor for its live steps; give one, or name an agent", id)
	}
	if system != nil {
		rw, ok := exec.(interface {
			WithSystem(context.Context, agent.Conversation, string) (agent.Conversation, error)
		})
		if !ok {
			return nil, nil, nil, fmt.Errorf("fork %s: its executor cannot change the system prompt (it keeps no conversations)", id)
		}
		if err := point.SetSystem(context.Background(), *system, rw.WithSystem); err != nil {
			return nil, nil, nil, err
		}
	}
	budget := ost.ops.Budget.WithDefaults()
	rec := journal.Record{Type: journal.RunStarted, Input: recs[0].Input, Budget: &budget, Agent: fe.Agent,
		Fork: &journal.Forked{Ask: f, Point: point}}
	taken, err := j.Store.Load(id)
	if err == nil && len(taken) == 0 {
		err = j.Store.Append(id, 0, rec)
	}
	switch {
	case errors.Is(err, journal.ErrConflict) || err == nil && len(taken) > 0:
		return nil, nil, nil, fmt.Errorf("%w fork of %s: run id %s is taken; choose another id", operator.ErrInvalid, f.Origin, id)
	case err != nil:
		return nil, nil, nil, fmt.Errorf("fork %s: %w", id, err)
	}
	return fe, exec, recs[0].Input, nil
}

// origin loads the origin of f, which must be a run of its own that
// ended, with its engine and fold.
func (j *Engine) origin(f agent.Fork) (*Engine, []journal.Record, *state, error) {
	if err := operator.ValidRunID(f.Origin); err != nil {
		return nil, nil, nil, err
	}
	recs, err := j.Store.Load(f.Origin)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(recs) == 0 || recs[0].Type != journal.RunStarted {
		return nil, nil, nil, fmt.Errorf("%w %q: no journal for it; fork a run that the list command or Show knows", operator.ErrUnknownRun, f.Origin)
	}
	if recs[0].Parent != "" {
		return nil, nil, nil, fmt.Errorf("%w fork of %s: it is a child run of run %s; fork that run", operator.ErrInvalid, f.Origin, recs[0].Parent)
	}
	oe, err := j.ofRecords(f.Origin, recs)
	if err != nil {
		return nil, nil, nil, err
	}
	info, err := oe.ShowRecords(f.Origin, recs)
	if err != nil {
		return nil, nil, nil, err
	}
	if !info.Status.Terminal() {
		return nil, nil, nil, fmt.Errorf("%w fork of %s: it is %s, still in flight; fork a run that ended (Completed, Failed or Cancelled), or cancel it first", operator.ErrInvalid, f.Origin, info.Status)
	}
	st := fold(recs)
	oe.delegations(f.Origin, st)
	return oe, recs, st, nil
}

// forkPoint is the state a fork of the origin whose fold is ost starts
// from: model call N's input as the origin's loop made it (agent.ForkAt).
func (j *Engine) forkPoint(f agent.Fork, ost *state) (agent.ForkPoint, error) {
	n, _ := agent.StepTurn(f.From)
	if n <= ost.base() {
		return agent.ForkPoint{}, fmt.Errorf("%w fork of %s from %s: %s is itself a fork of %s from %s; fork %s from a step before that", operator.ErrInvalid,
			f.Origin, f.From, f.Origin, ost.fork.Ask.Origin, ost.fork.Ask.From, ost.fork.Ask.Origin)
	}
	facts := ost.facts()
	step, ok := j.loopOf(ost).Find(ost.start(), facts, agent.ModelStep(n))
	if !ok || step.Model == nil {
		return agent.ForkPoint{}, fmt.Errorf("%w fork of %s from %s: %s never reached it; its last step is %s", operator.ErrInvalid, f.Origin, f.From, f.Origin, lastStep(ost))
	}
	p, err := agent.ForkAt(f.From, *step.Model, facts.Results)
	if err != nil {
		return agent.ForkPoint{}, fmt.Errorf("%w fork of %s: %v", operator.ErrInvalid, f.Origin, err)
	}
	return p, nil
}

// lastStep names the last step a run recorded ("none" for none).
func lastStep(st *state) string {
	last := ""
	for name := range st.steps {
		if last == "" || agent.StepBefore(last, name) {
			last = name
		}
	}
	if last == "" {
		return "none"
	}
	return last
}

// writes returns the writes of the run runID (whose fold is st): each
// write step with its result's start on one line, or Unknown when it
// started and recorded none; and, for each finished call of an agent
// tool, the writes of its child run, named by the call's step.
func (j *Engine) writes(runID string, st *state, depth int) []agent.Write {
	var out []agent.Write
	for _, name := range slices.Sorted(maps.Keys(st.steps)) {
		ss := st.steps[name]
		switch {
		case ss.Kind == agent.KindWrite && ss.Completed:
			out = append(out, agent.Write{Step: name, Result: agent.Clip(agent.Summarize(ss.Result), ForkPreviewLen)})
		case ss.Kind == agent.KindWrite && ss.Starts > 0:
			out = append(out, agent.Write{Step: name, Unknown: true})
		case ss.Completed && depth < maxDepth && j.isAgent(toolName(name)):
			out = append(out, j.childWrites(toolName(name), runID, name, depth)...)
		}
	}
	return out
}

// childWrites returns the writes of the child run of the agent call step
// of runID, as writes of that step.
func (j *Engine) childWrites(name, runID, step string, depth int) []agent.Write {
	c, _, err := j.child(name, runID)
	if err != nil {
		c = &Engine{Store: j.Store}
	}
	id := agent.ChildRunID(runID, step)
	_, cst, err := c.load(id)
	if err != nil || !cst.started {
		return nil
	}
	var out []agent.Write
	for _, w := range c.writes(id, cst, depth+1) {
		out = append(out, agent.Write{Step: step, Result: fmt.Sprintf("agent %s, whose child run %s made %s", name, id, w)})
	}
	return out
}

// toolName is NAME of "tool/N/I/NAME" ("" for a model step).
func toolName(step string) string {
	if _, tool := agent.StepTurn(step); !tool {
		return ""
	}
	return step[strings.LastIndex(step, "/")+1:]
}

// loopOf returns the loop of the run whose fold is s: the engine's, with
// in a replay, where no call waits for approval.
func (j *Engine) loopOf(s *state) agent.Loop {
	l := j.Loop
	if s == nil || s.fork == nil {
		return l
	}
	if s.fork.Ask.Replay {
		l.Policy = agent.ReplayPolicy{Inner: l.Policy}
	}
	return l
}

// start is where the loop starts: a fork's checkpoint, or the run's input.
func (s *state) start() agent.Checkpoint {
	if s.fork != nil {
		return s.fork.Point.Checkpoint
	}
	return agent.Start(s.input)
}

// base is the origin's model calls before a fork's live part (0 for a run
// of its own).
func (s *state) base() int {
	if s.fork != nil {
		return s.fork.Point.Base
	}
	return 0
}

// replay reports whether the run is a replay fork.
func (s *state) replay() bool { return s.fork != nil && s.fork.Ask.Replay }

// replayOf returns how the replay fork whose fold is st answers its calls:
// from the calls its origin recorded.
func (j *Engine) replayOf(st *state) (agent.Replay, error) {
	origin := st.fork.Ask.Origin
	recs, err := j.Store.Load(origin)
	if err != nil {
		return agent.Replay{}, fmt.Errorf("replay of %s: %w", origin, err)
	}
	return agent.Replay{Origin: origin, Calls: agent.OriginCalls(fold(recs).facts().Results)}, nil
}

// replaying records the result of the decided tool step of a replay fork
// (Replay.Answer) as its step.completed record; no tool runs. A conflict
// means the journal moved on, and deciding looks again either way.
func (r *driver) replaying(ctx context.Context) driveState {
	if err := r.lock.Held(ctx); err != nil {
		return r.done(agent.Outcome{}, &journal.LockLostError{RunID: r.runID, Step: r.step.Name, Err: err})
	}
	if r.replay == nil {
		rp, err := r.j.replayOf(r.st)
		if err != nil {
			return r.done(agent.Outcome{}, err)
		}
		r.replay = &rp
	}
	used := map[string]bool{}
	for _, ss := range r.st.steps {
		if from := agent.ReplayedFrom(ss.Result); ss.Completed && from != "" {
			used[from] = true
		}
	}
	res := r.replay.Answer(r.step.Name, *r.step.Call, used)
	rec := journal.Record{Type: journal.StepCompleted, Step: r.step.Name, Kind: r.step.Kind, Result: agent.EncodeToolResult(res), At: r.j.now()}
	if err := r.j.Store.Append(r.runID, r.seen, rec); err != nil && !errors.Is(err, journal.ErrConflict) {
		return r.done(agent.Outcome{}, err)
	}
	return r.deciding
}

// Drift returns how the fork forkID departs from its origin
// (agent.CompareRuns over both runs' recorded model replies).
func (j *Engine) Drift(forkID string) (agent.Drift, error) {
	if err := operator.ValidRunID(forkID); err != nil {
		return agent.Drift{}, err
	}
	recs, err := j.Store.Load(forkID)
	if err != nil {
		return agent.Drift{}, err
	}
	if len(recs) == 0 || recs[0].Type != journal.RunStarted {
		return agent.Drift{}, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, forkID)
	}
	fk := recs[0].Fork
	if fk == nil {
		return agent.Drift{}, fmt.Errorf("%w drift of %s: it is no fork; it has no origin to compare with", operator.ErrInvalid, forkID)
	}
	orecs, err := j.Store.Load(fk.Ask.Origin)
	if err != nil {
		return agent.Drift{}, err
	}
	own := map[string]json.RawMessage{}
	for name, ss := range fold(recs).steps {
		if ss.Completed {
			own[name] = ss.Result
		}
	}
	return agent.CompareRuns(fk.Ask.Origin, forkID, fk.Ask.From, fold(orecs).facts().Results, own), nil
}
