package workflows

import (
	"fmt"
	"math"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/streams"
)

// start sets the run up from its input, or from the checkpoint of the
// execution it continues: the state, the stream, the handlers, the input's
// checks and, for a new run, the tool list. An ending means it ended there.
func start(ctx workflow.Context, in Input) (*execution, *ending) {
	// continued is the run's own checkpoint, honoured only in an execution
	// that really continues one: the server sets the continued run id, and
	// a start input cannot. Its tool kinds and queued calls are never
	// taken from a client.
	forged := in.Continued != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == ""
	if forged {
		in.Continued = nil
	}
	r := &execution{
		ctx:    ctx,
		id:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		in:     in,
		turn:   turn{facts: agent.NewFacts(), gen: map[string]int{}, since: map[string]time.Time{}},
		state:  State{Status: agent.StatusRunning, Steps: []StepRecord{}},
		budget: agent.Budget{MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens, MaxCost: in.MaxCost},
	}
	if c := in.Continued; c != nil {
		r.restore(c)
	}
	var prev *streams.State
	if in.Continued != nil {
		prev = in.Continued.Stream
	}
	if err := r.openStream(prev); err != nil {
		return r, end(Result{}, err)
	}
	r.state.Budget = r.budget.WithDefaults()
	if err := r.setHandlers(); err != nil {
		return r, end(Result{}, err)
	}
	if forged {
		return r, end(r.fail(ForgedContinued))
	}
	if in.Agent != "" && workflow.GetInfo(ctx).ParentWorkflowExecution == nil {
		return r, end(r.fail(ForgedAgent))
	}
	if reason := r.checkInput(); reason != "" {
		return r, end(r.fail(reason))
	}
	r.publish()
	if in.Continued == nil {
		var list workflow.Future
		if in.Agent == "" {
			list = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, toolsOptions()), a.ListTools)
		} else {
			list = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, toolsOptions()), a.ListAgentTools, in.Agent)
		}
		if err := list.Get(ctx, &r.cat); err != nil {
			if ctx.Err() != nil {
				return r, end(r.cancelled())
			}
			return r, end(r.fail("list tools: " + err.Error()))
		}
		r.state.Model = r.cat.Model
		msgs := in.Messages
		if in.Agent != "" {
			msgs = agent.ChildInput(r.cat.System, msgs[0])
		}
		r.turn.cp = agent.Start(msgs)
	}
	r.loop = agent.Loop{Tools: r.cat.Tools, ToolsKey: r.cat.ToolsKey, FailOnCut: r.cat.FailOnCut, FailOnEmpty: r.cat.FailOnEmpty}
	return r, nil
}

// checkInput checks the run's input and takes its session settings; it
// returns why the run fails, or "".
func (r *execution) checkInput() string {
	in := r.in
	if in.Continued == nil && len(in.Messages) == 0 {
		return "the input has no messages"
	}
	if why := startRefs(in.Messages, workflow.GetInfo(r.ctx).ParentWorkflowExecution != nil); why != "" {
		return why
	}
	if in.Session {
		r.idle = DefaultSessionIdle
		if in.SessionIdle != "" {
			d, err := time.ParseDuration(in.SessionIdle)
			if err != nil || d <= 0 {
				return fmt.Sprintf("the input has session_idle %q: want a positive Go duration such as \"24h\", or absent for %s", in.SessionIdle, DefaultSessionIdle)
			}
			r.idle = d
		}
		r.state.Session, r.state.Idle = true, r.idle.String()
	}
	if in.MaxCost < 0 || math.IsNaN(in.MaxCost) || math.IsInf(in.MaxCost, 0) {
		return fmt.Sprintf("the input has max_cost %v: want a positive number of US dollars, or absent for no cost limit", in.MaxCost)
	}
	if in.MaxTurns < 0 || in.MaxTokens < 0 {
		return fmt.Sprintf("the input has max_turns %d, max_tokens %d: want positive limits, or absent for %d model calls and no token limit", in.MaxTurns, in.MaxTokens, agent.DefaultMaxTurns)
	}
	return ""
}

// restore takes over a previous execution's checkpoint.
func (r *execution) restore(c *Continued) {
	r.turn.cp, r.cat, r.state = c.Checkpoint, c.Catalog, c.State
	r.state.Runs = c.Runs
	r.lastStatus = c.LastStatus
	if r.state.Steps == nil {
		r.state.Steps = []StepRecord{}
	}
	r.turn.facts = c.Facts.Complete()
	operator.ReadOldDecisions(r.turn.facts) // facts an older build continued with
	r.turn.asked = c.Asked
	r.turn.models = r.turn.cp.Turn
	if c.Generations != nil {
		r.turn.gen = c.Generations
	}
	for m, t := range c.Since {
		r.turn.since[m] = t
	}
}
