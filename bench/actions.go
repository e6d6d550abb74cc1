package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// actionsParams sizes the billable actions section.
type actionsParams struct {
	// Turns is T of the model steps' run: T lookup turns and the answer.
	Turns int
	// StreamTurns is how many answers the streamed session gives.
	StreamTurns int
	// Delay is how long the scripted model takes to write each streamed
	// answer, as in the streamed turns section.
	Delay time.Duration
}

// The goals of the section (issue 48): a model step may bill at most 1.2×
// the actions of the bare chain's activity, a streamed turn 1.5× a bare
// session turn's.
const (
	actionsStepGoal   = 1.2
	actionsStreamGoal = 1.5
)

// counted is a worker's client whose RPCs are counted: the heartbeats
// among them are billed too.
type counted struct {
	c    client.Client
	rpcs *rpcCounter
}

// during runs fn and returns the RPCs the client made meanwhile.
func (k counted) during(fn func() error) (map[string]int64, error) {
	before := k.rpcs.snapshot()
	err := fn()
	return diffCalls(k.rpcs.snapshot(), before), err
}

// cloudActions counts Temporal Cloud's billable actions (countActions,
// and the workers' heartbeat RPCs) of AgentRun's runs against bare
// workflows that make the same calls: a run of T model steps against a
// bare chain of as many activities; a streamed and an unstreamed session
// against bare sessions of as many activities, message updates and (for
// the streamed one) signals; a parked run approved once by signal against
// a bare workflow that waits for one; a delegated run (parent + child)
// against a bare parent and child of as many activities. Each run runs
// once: the counts do not depend on timing.
func cloudActions(ctx context.Context, env *benchEnv, p actionsParams) ([]row, error) {
	stamp := runStamp()
	driver, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer driver.Close()
	dial := func() (counted, error) {
		k := counted{rpcs: newRPCCounter()}
		c, err := env.dial(k.rpcs)
		k.c = c
		return k, err
	}
	bare, err := dial()
	if err != nil {
		return nil, err
	}
	defer bare.c.Close()
	bareQueue := "bench-actions-bare-" + stamp
	bw := newActionsBareWorker(bare.c, bareQueue)
	if err := bw.Start(); err != nil {
		return nil, err
	}
	defer bw.Stop()
	// runBare runs the bare workflow name(args) as id and counts its
	// actions (its child's with childID set).
	runBare := func(id, childID, name string, args ...any) (actions, error) {
		calls, err := bare.during(func() error {
			r, err := driver.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: bareQueue}, name, args...)
			if err != nil {
				return err
			}
			return r.Get(ctx, nil)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		ids := []string{id}
		if childID != "" {
			ids = append(ids, childID)
		}
		a, _, err := runActions(ctx, driver, calls, ids...)
		return a, err
	}

	var rows []row
	const sec = "Temporal Cloud billable actions (docs.temporal.io/cloud/actions), counted from the histories (countActions) plus the workers' activity heartbeat RPCs, " +
		"AgentRun's runs vs bare workflows making the same calls, one run each"

	// Model steps: T lookup turns and the answer, against a bare chain of
	// as many activities.
	agentSide, err := dial()
	if err != nil {
		return nil, err
	}
	defer agentSide.c.Close()
	n := activityCount(p.Turns)
	steps := float64(p.Turns + 1)
	queue := "bench-actions-steps-" + stamp
	stop, err := startAgentWorker(agentSide.c, queue, agentScript(p.Turns), env.subdir("actions-steps"), nil, env.logger, agentOptions{})
	if err != nil {
		return nil, err
	}
	id := queue + "-run"
	calls, err := agentSide.during(func() error {
		in := workflows.Input{Messages: agent.UserMessages("Which of my policies changed?"), MaxTurns: p.Turns + 1}
		r, err := driver.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
		if err != nil {
			return err
		}
		var res workflows.Result
		if err := r.Get(ctx, &res); err != nil {
			return err
		}
		if res.Steps != n-1 {
			return fmt.Errorf("%s: %d steps, want %d", id, res.Steps, n-1)
		}
		return nil
	})
	stop()
	if err != nil {
		return nil, err
	}
	agentSteps, acts, err := runActions(ctx, driver, calls, id)
	if err != nil {
		return nil, err
	}
	if acts != n {
		return nil, fmt.Errorf("%s: %d activities, want %d", id, acts, n)
	}
	bareSteps, err := runBare(fmt.Sprintf("bare-chain-%s", stamp), "", bareWorkflowName, n)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("billable actions per model step, a run of %d lookup turns and the answer (%d activities) vs a bare chain of %d no-op activities; by kind per model step, AgentRun: %s; bare: %s",
		p.Turns, n, n, agentSteps.per(steps), bareSteps.per(steps)),
		Measured: float64(agentSteps.total()) / steps, Baseline: float64(bareSteps.total()) / steps, Goal: actionsStepGoal})

	// Streamed turns: the streamed section's session, streamed and not.
	streamRows, err := sessionActions(ctx, env, driver, dial, runBare, p, stamp, sec)
	if err != nil {
		return nil, err
	}
	rows = append(rows, streamRows...)

	// A parked run approved once, by the approve signal.
	parkRow, err := parkedActions(ctx, env, driver, dial, runBare, bareQueue, stamp, sec)
	if err != nil {
		return nil, err
	}
	rows = append(rows, parkRow)

	// A delegated run: the delegated section's planner and its child.
	delegRow, err := delegatedActions(ctx, env, driver, dial, runBare, stamp, sec)
	if err != nil {
		return nil, err
	}
	rows = append(rows, delegRow)
	return rows, nil
}

// bareRunner runs a bare workflow and counts its actions (see cloudActions).
type bareRunner func(id, childID, name string, args ...any) (actions, error)

// sessionActions runs the streamed section's session, unstreamed and then
// streamed, each on a worker of its own counted client, and bare sessions
// of the same activities, updates and (streamed) signals.
func sessionActions(ctx context.Context, env *benchEnv, driver client.Client, dial func() (counted, error), runBare bareRunner, p actionsParams, stamp, sec string) ([]row, error) {
	var script llm.Script
	for n := 1; n <= p.StreamTurns; n++ {
		script.Turns = append(script.Turns, llm.Turn{Text: answerFor(n), Delay: p.Delay.String()})
	}
	turns := float64(p.StreamTurns)
	var rows []row
	for _, stream := range []bool{false, true} {
		k, err := dial()
		if err != nil {
			return nil, err
		}
		defer k.c.Close()
		queue := fmt.Sprintf("bench-actions-session-%t-%s", stream, stamp)
		stop, err := startAgentWorker(k.c, queue, script, env.subdir(queue), nil, env.logger, agentOptions{})
		if err != nil {
			return nil, err
		}
		id := queue + "-run"
		var h streamHistory
		calls, err := k.during(func() error {
			var err error
			h, err = session(ctx, driver, queue, id, stream, p.StreamTurns)
			return err
		})
		stop()
		if err != nil {
			return nil, err
		}
		a, acts, err := runActions(ctx, driver, calls, id)
		if err != nil {
			return nil, err
		}
		// The bare session's turns signal as often as the session's model
		// steps published, spread evenly.
		in := bareSessionInput{Before: acts - p.StreamTurns, Signals: make([]int, p.StreamTurns)}
		for i := range h.signals {
			in.Signals[i%p.StreamTurns]++
		}
		b, err := bareSessionRun(ctx, driver, runBare, fmt.Sprintf("bare-session-%t-%s", stream, stamp), in)
		if err != nil {
			return nil, err
		}
		r := row{Section: sec, Measured: float64(a.total()) / turns, Baseline: float64(b.total()) / turns}
		if stream {
			r.Figure = fmt.Sprintf("billable actions per streamed turn, a streamed session of %d answers of %s (%.1f publish signals a turn) vs a bare session of as many activities, message updates and signals; by kind per turn, AgentRun: %s; bare: %s",
				p.StreamTurns, p.Delay, float64(h.signals)/turns, a.per(turns), b.per(turns))
			r.Goal = actionsStreamGoal
		} else {
			r.Figure = fmt.Sprintf("billable actions per turn, the same session unstreamed vs a bare session of as many activities and message updates; by kind per turn, AgentRun: %s; bare: %s",
				a.per(turns), b.per(turns))
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// parkedActions runs one approval-section run (the hand example with
// file_request) until it awaits approval, approves it by signal, and
// counts its actions against a bare workflow that upserts the same status,
// waits for one approve signal and runs as many no-op activities.
func parkedActions(ctx context.Context, env *benchEnv, driver client.Client, dial func() (counted, error), runBare bareRunner, bareQueue, stamp, sec string) (row, error) {
	k, err := dial()
	if err != nil {
		return row{}, err
	}
	defer k.c.Close()
	queue := "bench-actions-park-" + stamp
	w, closeTools, err := newApprovalWorker(k.c, env, queue, queue)
	if err != nil {
		return row{}, err
	}
	defer closeTools()
	if err := w.Start(); err != nil {
		return row{}, err
	}
	id := queue + "-run"
	calls, err := k.during(func() error {
		if _, err := driver.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, handInput); err != nil {
			return err
		}
		return approveBySignal(ctx, driver, queue, id)
	})
	w.Stop()
	if err != nil {
		return row{}, err
	}
	a, acts, err := runActions(ctx, driver, calls, id)
	if err != nil {
		return row{}, err
	}
	bareID := "bare-approval-" + stamp
	done := make(chan error, 1)
	var b actions
	go func() {
		var err error
		b, err = runBare(bareID, "", bareApprovalName, acts)
		done <- err
	}()
	if err := waitParked(ctx, driver, bareQueue, 1); err != nil {
		return row{}, err
	}
	if err := driver.SignalWorkflow(ctx, bareID, "", operator.SignalApprove, operator.ApprovePayload("bare")); err != nil {
		return row{}, err
	}
	if err := <-done; err != nil {
		return row{}, err
	}
	return row{Section: sec, Figure: fmt.Sprintf("billable actions per parked run approved once by the approve signal, the hand example (%d activities) vs a bare workflow that upserts the same status, waits for one signal and runs as many no-op activities; by kind, AgentRun: %s; bare: %s",
		acts, a.per(1), b.per(1)),
		Measured: float64(a.total()), Baseline: float64(b.total())}, nil
}

// approveBySignal waits until run id on queue awaits approval, approves
// its pending call by the approve signal and waits for it to complete.
func approveBySignal(ctx context.Context, c client.Client, queue, id string) error {
	if err := waitParked(ctx, c, queue, 1); err != nil {
		return err
	}
	marker, err := pendingMarker(ctx, c, id)
	if err != nil {
		return err
	}
	if err := c.SignalWorkflow(ctx, id, "", operator.SignalApprove, operator.ApprovePayload(marker)); err != nil {
		return err
	}
	var res workflows.Result
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	if !strings.HasPrefix(res.Answer, "Your request is filed as REQ-") {
		return fmt.Errorf("%s: answer %q; want the script's filed request", id, res.Answer)
	}
	return nil
}

// delegatedActions runs one delegated-section planner run (its middle
// step an agent tool, a child AgentRun run) and counts the actions of
// parent and child against a bare parent of as many activities with a
// bare child of as many.
func delegatedActions(ctx context.Context, env *benchEnv, driver client.Client, dial func() (counted, error), runBare bareRunner, stamp, sec string) (row, error) {
	k, err := dial()
	if err != nil {
		return row{}, err
	}
	defer k.c.Close()
	dir := env.subdir("actions-delegated")
	store, err := content.NewFileStore(dir + "/content")
	if err != nil {
		return row{}, err
	}
	queue := "bench-actions-delegated-" + stamp
	model := newTaskModel(delegatedScripts())
	opts := agentOptions{
		model: func(llm.Provider) llm.Provider { return model },
		agents: map[string]tools.Agent{delegateAgent: {Name: delegateAgent,
			Description: "Answers questions about the company's policies.", System: "Answer at once."}},
	}
	stop, err := startAgentWorker(k.c, queue, llm.Script{}, dir, store, env.logger, opts)
	if err != nil {
		return row{}, err
	}
	id := queue + "-run"
	childID := agent.ChildRunID(id, "tool/1/0/"+delegateAgent)
	calls, err := k.during(func() error {
		r, err := driver.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName,
			workflows.Input{Messages: agent.UserMessages(delegatedTask), MaxTurns: 5})
		if err != nil {
			return err
		}
		var res workflows.Result
		if err := r.Get(ctx, &res); err != nil {
			return err
		}
		if !strings.Contains(res.Answer, childAnswer) {
			return fmt.Errorf("%s: the answer %q does not carry the child's %q", id, res.Answer, childAnswer)
		}
		return nil
	})
	stop()
	if err != nil {
		return row{}, err
	}
	parent, parentActs, err := runActions(ctx, driver, calls, id)
	if err != nil {
		return row{}, err
	}
	child, childActs, err := runActions(ctx, driver, nil, childID)
	if err != nil {
		return row{}, err
	}
	bareID := "bare-delegate-" + stamp
	b, err := runBare(bareID, bareID+"-child", bareDelegateName, parentActs, childActs)
	if err != nil {
		return row{}, err
	}
	a := parent.add(child)
	return row{Section: sec, Figure: fmt.Sprintf("billable actions per delegated run, parent (%d activities) + child run (%d) vs a bare parent of as many no-op activities and a bare child workflow of as many; by kind, AgentRun: %s; bare: %s",
		parentActs, childActs, a.per(1), b.per(1)),
		Measured: float64(a.total()), Baseline: float64(b.total())}, nil
}
