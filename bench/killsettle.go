package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	agentconfig "github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// settleParams sizes the kill → settled section.
type settleParams struct {
	// Trials is how many kills the figure takes its median over.
	Trials int
	// ToolTimeout is create_ticket's "timeout" in the tools file the
	// section writes: the attempt's deadline is its start plus this.
	ToolTimeout time.Duration
}

// settleSlack is the part of the goal beyond the tool's timeout and the
// fence's grace: the retry's scheduling, the probe and the write.
const settleSlack = 2 * time.Second

// settleTimeout bounds one trial's waits: the run parking, the worker
// holding create_ticket, the write settling after the kill, the run
// completing.
const settleTimeout = 2 * time.Minute

// holdLine is what a worker logs once it holds create_ticket before its
// effect (internal/testhook).
const holdLine = "hold before create_ticket: waiting to be killed"

// killSettled runs the hand example on a worker process that holds
// create_ticket before its effect (AGENTRUN_TEST_HOLD_BEFORE), with
// create_ticket declared with a probe by title, no idempotency key and a
// short timeout; once it holds the approved write a second worker process
// without the hold joins the queue and the first is SIGKILLed. The figure
// is the time from the kill to the write step's ActivityTaskCompleted
// event (the retry on the second worker, settled by its probe), against
// the tool's timeout + fence.Grace + settleSlack. Each trial must settle
// by probe (not found, ran again) and file exactly one ticket.
func killSettled(ctx context.Context, env *benchEnv, workerBin string, p settleParams) ([]row, error) {
	began := time.Now()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	toolsFile := filepath.Join(env.subdir("settle"), "tools.json")
	decl := map[string]any{"tools": map[string]any{"create_ticket": map[string]any{
		"timeout": p.ToolTimeout.String(),
		"probe":   testenv.ProbeByTitle["probe"], // find_ticket by title
	}}}
	b, err := json.Marshal(decl)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(toolsFile, b, 0o644); err != nil {
		return nil, err
	}
	stamp := runStamp()
	var settles []time.Duration
	for trial := range p.Trials {
		d, err := settleTrial(ctx, env, c, workerBin, toolsFile, fmt.Sprintf("bench-settle-%s-%d", stamp, trial))
		if err != nil {
			return nil, err
		}
		settles = append(settles, d)
	}
	sec := fmt.Sprintf("Kill → settled, probe-only write: the hand example's create_ticket declared with a probe (find_ticket by title), no idempotency key and a %s timeout; the worker process (cmd worker) holding the approved write before its effect (AGENTRUN_TEST_HOLD_BEFORE) is SIGKILLed while a second worker process polls the same queue, on the same host (so the retry sees the killed pid gone and need not wait for its deadline); each trial settled by probe (not found, ran again) with 1 ticket; %s (the section took %s)",
		p.ToolTimeout, plural(p.Trials, "trial"), time.Since(began).Round(time.Second))
	s := ms(median(settles))
	goal := p.ToolTimeout + fence.Grace + settleSlack
	return []row{
		{Section: sec, Figure: fmt.Sprintf("ms from SIGKILL until the write completes on the other worker, settled by its probe (ActivityTaskCompleted), vs the tool's %s timeout + the %s grace + %s (median)", p.ToolTimeout, fence.Grace, settleSlack),
			Measured: s, Baseline: ms(goal), Unit: "ms", Goal: 1.0},
		{Section: sec, Figure: "ms from SIGKILL until the write is settled, vs the heartbeat timeout (median; expect at most the timeout plus the 1 s first retry interval, less by the age of the last heartbeat the server got: the SDK sends one per 0.8 × the timeout)",
			Measured: s, Baseline: ms(workflows.HeartbeatTimeout), Unit: "ms"},
	}, nil
}

// settleTrial runs one trial of killSettled on its own queue, journal and
// tickets file (the probe asks by title, and every run files the same
// title), and returns the time from the kill to the settled write.
func settleTrial(ctx context.Context, env *benchEnv, c client.Client, workerBin, toolsFile, id string) (time.Duration, error) {
	dir := env.subdir(id)
	wenv := append(env.workerEnv(id, dir, 0), "AGENTRUN_TOOLS="+toolsFile)
	holder, err := startWorker(ctx, workerBin, append(wenv[:len(wenv):len(wenv)], agentconfig.EnvTestHoldBefore+"=create_ticket"))
	if err != nil {
		return 0, err
	}
	defer holder.Stop(0)
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: hand.Prompt}}}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: id, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, input); err != nil {
		return 0, err
	}
	defer func() { _ = c.TerminateWorkflow(context.WithoutCancel(ctx), id, "", "bench: done") }() // a no-op once completed
	marker, err := waitMarker(ctx, c, id)
	if err != nil {
		return 0, err
	}
	if err := c.SignalWorkflow(ctx, id, "", operator.SignalApprove, operator.ApprovePayload(marker)); err != nil {
		return 0, fmt.Errorf("approve %s: %w", id, err)
	}
	step, err := heldWrite(ctx, c, id, holder)
	if err != nil {
		return 0, err
	}
	ticketsFile := filepath.Join(dir, "tickets.jsonl")
	if n, err := testenv.CountTickets(ticketsFile); err != nil || n != 0 {
		return 0, fmt.Errorf("%s: %d tickets (%v) while the worker holds create_ticket before its effect, want 0", id, n, err)
	}
	// The second worker is up before the kill: its start-up is not part of
	// the figure, as in a fleet.
	other, err := startWorker(ctx, workerBin, wenv)
	if err != nil {
		return 0, err
	}
	defer other.Stop(workerStopTimeout)
	holder.Stop(0)
	killed := time.Now()
	done, res, err := writeCompleted(ctx, c, id, step)
	if err != nil {
		return 0, fmt.Errorf("%w\nsecond worker: %s", err, other.Tail())
	}
	s := agent.SettledOf(res)
	if s == nil || s.By != agent.SettledByProbe || s.Probe == nil || s.Probe.Verdict != agent.ProbeNotFound {
		return 0, fmt.Errorf("%s: %s completed with settled %+v, want settled by probe, not found (result %s)", id, step, s, agent.Clip(string(res), 300))
	}
	wctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if err := c.GetWorkflow(wctx, id, "").Get(wctx, nil); err != nil {
		return 0, fmt.Errorf("run %s: %w", id, err)
	}
	if n, err := testenv.CountTickets(ticketsFile); err != nil || n != 1 {
		return 0, fmt.Errorf("%s: %d tickets (%v) after the run completed, want 1", id, n, err)
	}
	return done.Sub(killed), nil
}

// waitMarker waits until the run awaits approval and returns the pending
// approval's marker.
func waitMarker(ctx context.Context, c client.Client, id string) (string, error) {
	deadline := time.Now().Add(settleTimeout)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m, err := pendingMarker(ctx, c, id)
		if err == nil {
			return m, nil
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return "", fmt.Errorf("%s did not await approval within %v: %v", id, settleTimeout, last)
}

// heldWrite waits until w logs that it holds create_ticket, checks that
// the run's pending create_ticket step started on w, and returns the
// step's activity id (its step name).
func heldWrite(ctx context.Context, c client.Client, id string, w *testenv.Proc) (string, error) {
	deadline := time.Now().Add(settleTimeout)
	for !w.Logged(holdLine) {
		if !w.Running() {
			return "", fmt.Errorf("%s: the holding worker exited: %s", id, w.Tail())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("%s: the worker did not hold create_ticket within %v: %s", id, settleTimeout, w.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	desc, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return "", err
	}
	for _, a := range desc.RawResponse.GetPendingActivities() {
		if !strings.HasSuffix(a.GetActivityId(), "/create_ticket") || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
			continue
		}
		if pid, _ := strconv.Atoi(strings.SplitN(a.GetLastWorkerIdentity(), "@", 2)[0]); pid != w.Pid() {
			return "", fmt.Errorf("%s: create_ticket started on %q, not on the holding worker (pid %d)", id, a.GetLastWorkerIdentity(), w.Pid())
		}
		return a.GetActivityId(), nil
	}
	return "", fmt.Errorf("%s: the worker holds create_ticket but the run has no started create_ticket activity", id)
}

// writeCompleted waits for an ActivityTaskCompleted event of the step's
// activity (the retry, or a later one that the workflow scheduled after
// waiting for the fence) and returns its time and result. A failed or
// timed-out attempt of it fails only when the retry policy gives up, which
// the run then shows: it is reported when the step has not completed by
// settleTimeout.
func writeCompleted(ctx context.Context, c client.Client, id, step string) (time.Time, json.RawMessage, error) {
	deadline := time.Now().Add(settleTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		scheduled := map[int64]bool{}
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return time.Time{}, nil, fmt.Errorf("history of %s: %w", id, err)
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if e.GetActivityTaskScheduledEventAttributes().GetActivityId() == step {
					scheduled[e.GetEventId()] = true
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := e.GetActivityTaskCompletedEventAttributes()
				if !scheduled[a.GetScheduledEventId()] {
					continue
				}
				var res json.RawMessage
				if err := converter.GetDefaultDataConverter().FromPayloads(a.GetResult(), &res); err != nil {
					return time.Time{}, nil, fmt.Errorf("%s: the result of %s: %w", id, step, err)
				}
				return e.GetEventTime().AsTime(), res, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}, nil, fmt.Errorf("%s: %s did not complete within %v of the kill", id, step, settleTimeout)
}
