package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// delegatedParams sizes the delegated step section.
type delegatedParams struct {
	// Rounds is how many measured runs of each kind alternate, after one
	// warm-up run of each.
	Rounds int
}

// delegatedGoal is the goal for a delegated run's wall time against a
// direct one's. A delegated run has the direct run's two model steps, but
// its middle step is a child AgentRun workflow instead of one activity:
// the parent's workflow task that starts it, the server's start, the
// child's first workflow task, its own ListAgentTools and model step,
// each followed by a workflow task, its report to the parent (a signal
// and a workflow task of the parent), its completion and the parent's
// workflow task that takes the result: about twice the direct run's
// server round trips (53 history events against 31). Measured on the
// bench's 2-core machine, shared, at loads of 3.8 to 5.8: 1.66, 1.74 and
// 1.85 (median of 20 rounds; 2.08 in a -quick run of 2). The goal leaves room
// above that for the machine's noise; a child run that costs another
// activity or signal misses it.
const delegatedGoal = 2.1

// The delegated section's runs: a planner that calls lookup (direct) or
// the agent tool helper (delegated), and helper's child run, which answers
// at once. One worker plays all three scripts (taskModel), choosing by the
// run's task.
const (
	delegateAgent = "helper"
	directTask    = "Bench direct: look up the VPN policy and answer."
	delegatedTask = "Bench delegated: ask the helper about the VPN policy and answer."
	childTask     = "Say what the VPN policy is."
	childAnswer   = "The VPN policy: use the corporate client, renew the certificate yearly."
)

// delegatedScripts are the scripts of the three kinds of run, by their
// first user message.
func delegatedScripts() map[string]llm.Script {
	return map[string]llm.Script{
		directTask: {Turns: []llm.Turn{
			{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)}}},
			{Text: "Done: " + llm.LastToolResult},
		}},
		delegatedTask: {Turns: []llm.Turn{
			{ToolCalls: []llm.ScriptedCall{{Name: delegateAgent, Args: json.RawMessage(fmt.Sprintf(`{"task":%q}`, childTask))}}},
			{Text: "Done: " + llm.LastToolResult},
		}},
		childTask: {Turns: []llm.Turn{{Text: childAnswer}}},
	}
}

// taskModel is a scripted model that plays, for each run, the script of
// its first user message: so that one worker (one model) runs the
// planners and the child.
type taskModel map[string]*llm.Scripted

func newTaskModel(scripts map[string]llm.Script) taskModel {
	m := taskModel{}
	for task, s := range scripts {
		m[task] = llm.NewScripted(s)
	}
	return m
}

func (taskModel) Name() string { return "scripted" }

func (m taskModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	for _, msg := range req.Messages {
		if msg.Role != agent.RoleUser {
			continue
		}
		if p, ok := m[msg.Content]; ok {
			return p.Complete(ctx, req)
		}
		return agent.ModelReply{}, fmt.Errorf("bench model: no script for the task %q", msg.Content)
	}
	return agent.ModelReply{}, fmt.Errorf("bench model: the request has no user message")
}

// runHistory is what the delegated section reads from one run's history.
type runHistory struct {
	bytes, events, activities int
	// step is the middle step in the server's times: CallTool scheduled →
	// completed, or the child's start initiated → its completion.
	step time.Duration
}

func (h runHistory) add(o runHistory) runHistory {
	return runHistory{bytes: h.bytes + o.bytes, events: h.events + o.events, activities: h.activities + o.activities, step: h.step + o.step}
}

// readRunHistory reads id's history: its size (proto.Size of each event),
// its events and activities, and the time of its tool or child step.
func readRunHistory(ctx context.Context, c client.Client, id string) (runHistory, error) {
	var h runHistory
	var stepStart time.Time
	scheduled := map[int64]string{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return h, fmt.Errorf("history of %s: %w", id, err)
		}
		h.bytes += proto.Size(e)
		h.events++
		at := e.GetEventTime().AsTime()
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			h.activities++
			scheduled[e.GetEventId()] = activities.Method(a.GetActivityType().GetName())
			if activities.Method(a.GetActivityType().GetName()) == "CallTool" {
				stepStart = at
			}
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == "CallTool" {
			h.step += at.Sub(stepStart)
		}
		if e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil {
			stepStart = at
		}
		if e.GetChildWorkflowExecutionCompletedEventAttributes() != nil {
			h.step += at.Sub(stepStart)
		}
	}
	return h, nil
}

// delegatedStep runs, on one worker of one dev server, planner runs that
// delegate their middle step to an agent tool whose child answers at once
// against planner runs that call lookup there, alternating which goes
// first after one warm-up run of each, and compares their wall time per
// run, their middle step's time in the histories, and the delegated
// tree's (parent + child) history against the direct run's.
func delegatedStep(ctx context.Context, env *benchEnv, p delegatedParams) ([]row, error) {
	sec := fmt.Sprintf("Delegated step: a planner run whose middle step calls an agent tool, a child AgentRun workflow that answers at once (parent: 2 model steps + the agent step; child: 1 model step), vs one that calls the read tool lookup (2 model steps + 1 tool step); one worker, %d alternating rounds each", p.Rounds)
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dir := env.subdir("delegated")
	store, err := content.NewFileStore(dir + "/content")
	if err != nil {
		return nil, err
	}
	queue := "bench-delegated"
	model := newTaskModel(delegatedScripts())
	opts := agentOptions{
		model: func(llm.Provider) llm.Provider { return model },
		agents: map[string]tools.Agent{delegateAgent: {Name: delegateAgent,
			Description: "Answers questions about the company's policies.", System: "Answer at once."}},
	}
	stop, err := startAgentWorker(c, queue, llm.Script{}, dir, store, env.logger, opts)
	if err != nil {
		return nil, err
	}
	defer stop()

	type side struct {
		name, task string
		turns      int // the model calls the run counts, its child's included
		times      []time.Duration
		hist       []runHistory
	}
	direct := &side{name: "direct", task: directTask, turns: 2}
	delegated := &side{name: "delegated", task: delegatedTask, turns: 3}
	stamp := runStamp()
	for round := 0; round <= p.Rounds; round++ {
		order := []*side{direct, delegated}
		if round%2 == 1 {
			order = []*side{delegated, direct}
		}
		for _, s := range order {
			id := fmt.Sprintf("delegated-%s-%s-%d", s.name, stamp, round)
			in := workflows.Input{Messages: agent.UserMessages(s.task), MaxTurns: 5}
			start := time.Now()
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
			if err != nil {
				return nil, err
			}
			var res workflows.Result
			if err := r.Get(ctx, &res); err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			took := time.Since(start)
			if res.Steps != 3 || res.Turns != s.turns {
				return nil, fmt.Errorf("%s: %d steps and %d model calls, want 3 and %d", id, res.Steps, res.Turns, s.turns)
			}
			if s == delegated && !strings.Contains(res.Answer, childAnswer) {
				return nil, fmt.Errorf("%s: the answer %q does not carry the child's %q", id, res.Answer, childAnswer)
			}
			if round == 0 {
				continue
			}
			h, err := readRunHistory(ctx, c, id)
			if err != nil {
				return nil, err
			}
			if s == delegated {
				ch, err := readRunHistory(ctx, c, agent.ChildRunID(id, "tool/1/0/"+delegateAgent))
				if err != nil {
					return nil, err
				}
				if ch.activities != 2 { // ListAgentTools and its model step
					return nil, fmt.Errorf("%s: the child ran %d activities, want 2", id, ch.activities)
				}
				h = h.add(ch)
				h.step -= ch.step // the child has no middle step
			}
			s.times, s.hist = append(s.times, took), append(s.hist, h)
		}
	}

	mean := func(ds []time.Duration) time.Duration {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return sum / time.Duration(len(ds))
	}
	avg := func(s *side, f func(runHistory) float64) float64 {
		var sum float64
		for _, h := range s.hist {
			sum += f(h)
		}
		return sum / float64(len(s.hist))
	}
	steps := func(s *side) []time.Duration {
		var ds []time.Duration
		for _, h := range s.hist {
			ds = append(ds, h.step)
		}
		return ds
	}
	return []row{
		{Section: sec, Figure: "ms per run, delegated vs direct (median of rounds)", Measured: ms(median(delegated.times)), Baseline: ms(median(direct.times)), Unit: "ms",
			Goal: delegatedGoal, GoalNote: "a child workflow's start, ListAgentTools, model step, report and completion"},
		{Section: sec, Figure: "ms per run, delegated vs direct (mean of rounds)", Measured: ms(mean(delegated.times)), Baseline: ms(mean(direct.times)), Unit: "ms"},
		{Section: sec, Figure: "ms of the middle step in the parent's history, agent step (child initiated → completed) vs tool step (CallTool scheduled → completed), median",
			Measured: ms(median(steps(delegated))), Baseline: ms(median(steps(direct))), Unit: "ms"},
		{Section: sec, Figure: "history bytes per run, delegated tree (parent + child) vs direct run", Measured: avg(delegated, func(h runHistory) float64 { return float64(h.bytes) }),
			Baseline: avg(direct, func(h runHistory) float64 { return float64(h.bytes) }), Unit: "B"},
		{Section: sec, Figure: "history events per run, delegated tree (parent + child) vs direct run", Measured: avg(delegated, func(h runHistory) float64 { return float64(h.events) }),
			Baseline: avg(direct, func(h runHistory) float64 { return float64(h.events) }), Unit: ""},
		{Section: sec, Figure: "activities per run, delegated tree (parent + child) vs direct run", Measured: avg(delegated, func(h runHistory) float64 { return float64(h.activities) }),
			Baseline: avg(direct, func(h runHistory) float64 { return float64(h.activities) }), Unit: ""},
	}, nil
}
