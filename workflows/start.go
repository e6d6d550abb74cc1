package workflows

import (
	"fmt"
	"math"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/streams"
)

// start sets the run up from its input, or from the checkpoint of the
// execution it continues: the state, the stream, the handlers, the input's
// checks and, for a new run, the tool list. An ending means it ended there.
func start(ctx workflow.Context, in Input) (*execution, *ending) {
	// continued is the run's own checkpoint: its tool kinds and queued
	// calls are never taken from a client (trustedContinued).
	v := takeVersions(ctx) // first: before anything the execution records
	refusal := refuseStart(ctx, in, v)
	if refusal != "" {
		in.Continued = nil
	}
	r := &execution{
		ctx:    ctx,
		v:      v,
		id:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		in:     in,
		turn:   turn{facts: agent.NewFacts(), gen: map[string]int{}, since: map[string]time.Time{}},
		state:  State{Status: agent.StatusRunning, Steps: []StepRecord{}},
		budget: agent.Budget{MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens, MaxCost: in.MaxCost},
	}
	r.delegated = delegatedRun(ctx, in, r.id, v)
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
	if refusal != "" {
		return r, end(r.fail(refusal))
	}
	atStart := in.Agent != "" && !r.delegated // the run names its agent at its start
	if atStart && workflow.GetInfo(ctx).ParentWorkflowExecution == nil &&
		r.v.of(ctx, versionStartAgent) == workflow.DefaultVersion {
		return r, end(r.fail(ForgedAgent))
	}
	if reason := r.checkInput(); reason != "" {
		return r, end(r.fail(reason))
	}
	r.checkAttrs()
	r.publish()
	r.names = activityNames(ctx, r.v)
	if in.Continued == nil {
		name := in.Agent
		var fork activities.ForkStart
		if in.Fork != nil {
			var err error
			if fork, err = r.readFork(); err != nil {
				if ctx.Err() != nil {
					return r, end(r.cancelled())
				}
				return r, end(r.fail(err.Error()))
			}
			name, atStart = fork.Agent, fork.Agent != ""
		}
		var list workflow.Future
		opts := workflow.WithActivityOptions(ctx, toolsOptions())
		switch {
		case name == "":
			list = workflow.ExecuteActivity(opts, r.names.listTools)
		case atStart:
			list = workflow.ExecuteActivity(opts, r.names.listAgentToolsAtStart, name)
		default:
			list = workflow.ExecuteActivity(opts, r.names.listAgentTools, in.Agent)
		}
		if err := list.Get(ctx, &r.cat); err != nil {
			if ctx.Err() != nil {
				return r, end(r.cancelled())
			}
			return r, end(r.fail("list tools: " + err.Error()))
		}
		if why := activities.MalformedCatalog(r.cat, name); why != "" && r.v.of(ctx, versionCatalogChecked) >= 1 {
			// Taken only here, so a run that never lists a malformed
			// catalog records no marker, and one recorded before replays
			// on.
			return r, end(r.fail(fmt.Sprintf(MalformedCatalog, why)))
		}
		r.state.Model = r.cat.Model
		msgs := in.Messages
		switch {
		case in.Agent != "" && !atStart:
			msgs = agent.ChildInput(r.cat.System, msgs[0])
		case r.cat.System != "":
			// A named agent's system prompt, first (a catalog listed
			// before there were named agents has none here).
			msgs = append([]agent.Message{{Role: agent.RoleSystem, Content: r.cat.System}}, msgs...)
		}
		r.turn.cp = agent.Start(msgs)
		if in.Fork != nil {
			r.startFork(fork)
		}
	}
	r.loop = agent.Loop{Tools: r.cat.Tools, ToolsKey: r.cat.ToolsKey, FailOnCut: r.cat.FailOnCut, FailOnEmpty: r.cat.FailOnEmpty}
	if r.state.Fork != nil && r.state.Fork.Replay {
		r.loop.Policy = agent.ReplayPolicy{}
	}
	if r.cat.ToolsKey != "" {
		// Every step carries it, and runs only on a worker whose own tools
		// it is (activities/binding.go). A catalog without a tools key was
		// listed before there were any: its steps are checked as then.
		r.catKey = r.cat.Binding().Key()
	}
	return r, nil
}

// refuseStart returns why an execution fails at its start, before it runs
// anything, from its input and what the server says of it; "" when it
// runs. The rule for continued (trustedContinued) and for a cron schedule.
// Where it refuses what the build before it ran (a cron schedule, a
// continued honoured in a cron run or a workflow retry), it takes
// versionTrustedContinued, so a history recorded before replays on; a run
// that starts as it always did records no marker.
func refuseStart(ctx workflow.Context, in Input, v versions) string {
	info := workflow.GetInfo(ctx)
	before := "" // what the build before refused
	if in.Continued != nil && info.ContinuedExecutionRunID == "" {
		before = ForgedContinued
	}
	now := before
	switch {
	case info.CronSchedule != "":
		now = fmt.Sprintf(CronRefused, info.CronSchedule)
	case in.Continued != nil && !trustedContinued(info):
		now = ForgedContinued
		if info.Attempt > 1 {
			now = fmt.Sprintf(RetriedContinued, info.Attempt)
		}
	}
	if now != before && v.of(ctx, versionTrustedContinued) == workflow.DefaultVersion {
		return before
	}
	return now
}

// trustedContinued reports whether the execution is one that its run's own
// continue-as-new started, the only one whose input's continued is the
// run's checkpoint. The server sets the continued run id on three kinds of
// execution, and only this one takes its input from the workflow's code:
//
//   - continue-as-new: attempt 1, no cron schedule. The input is the one
//     the previous execution built: AgentRun's checkpoint (a client's
//     start input with continued fails at once, and refusals never retry).
//     Only workflow code can continue as new, so only a worker of the
//     namespace running a workflow of its own that continues as new into
//     AgentRun could choose that input: this rule does not authenticate
//     the checkpoint against that.
//   - a workflow retry (attempt above 1): the input is the retried
//     execution's, which may be a client's start input. A retry of a real
//     continued execution looks the same, so it is refused too
//     (RetriedContinued): its steps are not run again from a checkpoint
//     that a client may have written.
//   - a cron run: the input is the client's start input, every time. A
//     cron schedule is refused outright (CronRefused).
//
// A reset keeps the started event of the execution it resets (its input,
// attempt, cron schedule and continued run id), so a reset execution is
// judged as the one it resets was.
func trustedContinued(info *workflow.Info) bool {
	return info.ContinuedExecutionRunID != "" && info.Attempt <= 1 && info.CronSchedule == ""
}

// checkInput checks the run's input and takes its session settings; it
// returns why the run fails, or "".
func (r *execution) checkInput() string {
	in := r.in
	if why := r.refuseFork(); why != "" {
		return why
	}
	if in.Continued == nil && in.Fork == nil && len(in.Messages) == 0 {
		return "the input has no messages"
	}
	if why := startRefs(in.Messages, r.delegated); why != "" {
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

// delegatedRun reports whether the execution belongs to a child run that an
// agent run's call of an agent tool started: one with an agent, a parent,
// and the id agent.ChildRunID gives for a step of that parent. Only such a
// run takes its task and budget from its parent and reports to it. A run
// that another workflow (a team's own) started with an agent names its
// agent at its start (version 1 of versionStartAgent); recorded before,
// it was a child run like any.
func delegatedRun(ctx workflow.Context, in Input, id string, v versions) bool {
	p := workflow.GetInfo(ctx).ParentWorkflowExecution
	if in.Agent == "" || p == nil {
		return false
	}
	if agent.IsChildRunID(p.ID, id) {
		return true
	}
	return v.of(ctx, versionStartAgent) == workflow.DefaultVersion
}
