package agentrun

import (
	"cmp"
	"context"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

type (
	// HazardError refuses a fork whose point comes before writes its
	// origin made, which the fork may make again: one line naming them.
	// ForkOptions.AckWrites acknowledges them. Match it with errors.As.
	HazardError = agent.HazardError
	// Drift is how a fork's live part departs from its origin: the first
	// step where its model's reply differs, the calls the origin did not
	// make, whether the final answer changed; String says it in one line.
	Drift = agent.Drift
)

// ForkOptions are what a fork changes (Client.Fork, Local.Fork): a new run that goes
// on from a step of a run that ended. The steps before From come from the
// origin's record (no model is called and no tool runs for them); From and
// every step after it run live.
type ForkOptions struct {
	// From is the fork's first live step: "llm/N" runs model call N and
	// everything after it anew; "tool/N/I/NAME" keeps model call N's reply
	// and runs its calls from I on anew (approvals asked again). Required.
	From string
	// ID is the fork's run id. Default "": the origin's id, "-fork-", From
	// with its slashes as dots, "-" and 6 hex digits of a hash of what the
	// fork asks ("refund-7-fork-llm.2-3fa9c1"): the same fork asked twice
	// gets the same id, and the second is refused as existing.
	ID string
	// Agent runs the live steps on another of Config.Agents (its model,
	// tools and system prompt). Default "": the origin's agent.
	Agent string
	// System replaces the system prompt of the live model steps. Default
	// "": the agent's (the origin's, or Agent's when it has one).
	System string
	// AckWrites acknowledges that the fork may make again the writes the
	// origin made at or after From. Without it such a fork is refused with
	// a *HazardError, and nothing is written.
	AckWrites bool
	// Replay makes the fork an evaluation: no tool runs; each call the live
	// model asks for is answered from the origin's record when the origin
	// made the same call (same tool, same arguments), and refused (an
	// error result the model reads) otherwise; no call waits for approval.
	// LocalRun.Drift and Client.Drift say where it departs. Default false.
	Replay bool
}

// Fork starts a fork of the local run origin, which must have ended
// (Completed, Failed or Cancelled), and drives it as Start does, until it
// ends or waits for a person; then it returns the fork. Its lineage is in
// its journal (the origin, the step, what changed, the writes
// acknowledged); its budget is the origin's, counting only its own model
// calls. A refusal is one line and writes nothing: ErrRunNotFound for an
// unknown origin, ErrUnknownAgent, a *HazardError, or an error saying
// what else is wrong (a run in flight, a step it never reached, an id in
// use).
func (l *Local) Fork(ctx context.Context, origin string, opts ForkOptions) (*LocalRun, error) {
	f := agent.Fork{Origin: origin, From: opts.From, Agent: opts.Agent, AckWrites: opts.AckWrites, Replay: opts.Replay}
	if opts.System != "" {
		f.System = &opts.System
	}
	id := cmp.Or(opts.ID, agent.ForkID(f))
	e, a, _, err := l.of(origin)
	if err != nil {
		return nil, fmt.Errorf("fork of %s: %w", origin, err)
	}
	var exec agent.Executor = a.exec
	if opts.Agent != "" {
		exec = nil // the agent's own (local.Engine.Agents)
	}
	if _, _, _, err := e.StartFork(id, f, exec); err != nil {
		return nil, err // refused: nothing written
	}
	run := l.Run(id)
	if _, err := run.Resume(ctx); err != nil {
		return run, err // started: its journal keeps what was done, and Resume goes on
	}
	return run, nil
}

// Drift returns how the fork r departs from its origin (a replay's
// evaluation; any fork's). A run that is no fork is an error.
func (r *LocalRun) Drift(ctx context.Context) (Drift, error) {
	if err := ctx.Err(); err != nil {
		return Drift{}, err
	}
	e, _, _, err := r.l.of(r.id)
	if err != nil {
		return Drift{}, err
	}
	d, err := e.Drift(r.id)
	if err != nil {
		return Drift{}, r.wrap("drift", err)
	}
	return d, nil
}
