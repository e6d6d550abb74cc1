package workflows

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// steps is the run's loop: from the current turn's checkpoint and its
// facts, the agent loop says the next step, which runs, or where the run
// stands (outcome), until the run ends.
func (r *execution) steps() *ending {
	for {
		if r.ctx.Err() != nil {
			return end(r.cancelled())
		}
		seen := r.inputs.changes
		d := r.budget.LimitTree(r.loop.Next(r.turn.cp, r.turn.facts), r.state.Delegated-r.forkBase(), r.state.Usage, r.isAgent)
		r.advance(d.Checkpoint)
		var e *ending
		if d.Step != nil {
			e = r.step(*d.Step, seen)
		} else {
			e = r.reached(d.Outcome, seen)
		}
		if e != nil {
			return e
		}
	}
}

// step runs the step the loop asked for, first continuing as new when it
// is due, and shows the run Running again if it waited.
func (r *execution) step(s agent.Step, seen int) *ending {
	if r.shouldContinue() {
		return end(Result{}, r.continueAsNew())
	}
	if r.outcome != nil || r.state.Status != agent.StatusRunning {
		r.outcome = nil
		r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Why, r.state.Reason = agent.StatusRunning, nil, "", "", ""
		r.state.Fence = nil
		r.publish()
	}
	r.inputs.acted = seen
	if n, tool := agent.StepTurn(s.Name); !tool && n > r.turn.models {
		r.turn.models = n
	}
	if err := r.execute(s); err != nil {
		if r.ctx.Err() != nil {
			return end(r.cancelled())
		}
		return end(r.fail(err.Error()))
	}
	return nil
}

// advance moves the run to a newer checkpoint and forgets what it settled.
func (r *execution) advance(cp agent.Checkpoint) {
	if cp.Turn == r.turn.cp.Turn {
		return
	}
	r.turn.cp = cp
	r.state.Turns = cp.Turn - r.forkBase()
	r.turn.facts.Forget(cp)
	clear(r.turn.since)
	for name := range r.turn.gen {
		if n, _ := agent.StepTurn(name); n < cp.Turn {
			delete(r.turn.gen, name)
		}
	}
}

// maxPolls is how many stream polls an execution serves before it continues
// as new: the server refuses updates past 2,000 per run.
const maxPolls = 1500

// mustContinue reports whether the run must continue as new before it goes
// on: Temporal suggests it (its history nears the limits), or its stream
// served maxPolls polls.
func (r *execution) mustContinue() bool {
	return workflow.GetInfo(r.ctx).GetContinueAsNewSuggested() || r.stream.Served() >= maxPolls
}

// shouldContinue reports whether the run should continue as new before its
// next step: Temporal suggests it, its stream served maxPolls polls, or
// ContinueAfter steps ran here.
func (r *execution) shouldContinue() bool {
	if r.mustContinue() {
		return true
	}
	return r.in.ContinueAfter > 0 && r.stepsHere >= r.in.ContinueAfter
}

// continueAsNew ends this execution with a continue-as-new that carries the
// checkpoint, after applying every operator input already delivered.
func (r *execution) continueAsNew() error {
	r.finishHandlers(false)
	for _, name := range operator.Signals() {
		drainSignals(workflow.GetSignalChannel(r.ctx, name), func(raw converter.RawValue) { r.operate(name, raw) })
	}
	next := Input{MaxTurns: r.budget.MaxTurns, MaxTokens: r.budget.MaxTokens, MaxCost: r.budget.MaxCost, ContinueAfter: r.in.ContinueAfter,
		Session: r.in.Session, SessionIdle: r.in.SessionIdle, Stream: r.in.Stream, Agent: r.in.Agent, Continued: r.checkpoint()}
	st := r.stream.State()
	next.Continued.Stream = &st
	next.Continued.LastStatus = r.lastStatus
	workflow.GetLogger(r.ctx).Info("continuing as new", "turn", r.turn.cp.Turn, "steps", r.state.StepCount)
	return workflow.NewContinueAsNewError(r.ctx, WorkflowName, next)
}

// checkpoint is what a continued run needs: bounded whatever the turn.
func (r *execution) checkpoint() *Continued {
	st := r.state
	st.Status, st.Pending, st.Indeterminate, st.Reason = agent.StatusRunning, nil, "", ""
	c := &Continued{Checkpoint: r.turn.cp, Facts: r.turn.facts, Generations: r.turn.gen, Catalog: r.cat, State: st, Runs: r.state.Runs + 1}
	if len(r.turn.since) > 0 {
		c.Since = r.turn.since
	}
	c.Asked = r.turn.asked
	return c
}
