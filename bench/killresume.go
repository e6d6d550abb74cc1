package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// killParams sizes the kill → resume section.
type killParams struct {
	// Trials is how many kills the figure takes its median over.
	Trials int
	// Delay is AGENTRUN_DEMO_DELAY: how long lookup sleeps. It must stay
	// well above the time the bench takes to see the step start (polls
	// every 10 ms), so that the kill lands inside the step even on a loaded
	// machine; 2 s in both modes.
	Delay time.Duration
}

// killStepTimeout bounds one trial's waits: the step starting, and the
// step completing after the kill (heartbeat timeout, retry backoff, delay).
const killStepTimeout = 90 * time.Second

// killResume SIGKILLs a worker process inside a read step (the hand
// example's lookup, slowed by AGENTRUN_DEMO_DELAY) while a second worker
// process polls the same queue, and measures the time from the kill to the
// step's ActivityTaskCompleted event on the other worker, against the
// heartbeat timeout.
func killResume(ctx context.Context, env *benchEnv, workerBin string, p killParams) ([]row, error) {
	began := time.Now()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stamp := runStamp()
	queue := "bench-kill-" + stamp
	wenv := env.workerEnv(queue, env.subdir("kill-journal"), p.Delay)
	var workers []*testenv.Proc
	defer func() {
		for _, w := range workers {
			w.Stop(0)
		}
	}()
	var resumes []time.Duration
	for trial := range p.Trials {
		for len(workers) < 2 {
			w, err := startWorker(ctx, workerBin, wenv)
			if err != nil {
				return nil, err
			}
			workers = append(workers, w)
		}
		id := fmt.Sprintf("bench-kill-%s-%d", stamp, trial)
		input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: hand.Prompt}}}
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, input); err != nil {
			return nil, err
		}
		activityID, identity, err := startedCallTool(ctx, c, id)
		if err != nil {
			return nil, err
		}
		pid, _ := strconv.Atoi(strings.SplitN(identity, "@", 2)[0])
		victim := -1
		for i, w := range workers {
			if w.Pid() == pid {
				victim = i
			}
		}
		if victim < 0 {
			return nil, fmt.Errorf("%s: lookup started on %q, not one of the bench's workers", id, identity)
		}
		workers[victim].Stop(0)
		killed := time.Now()
		workers = append(workers[:victim], workers[victim+1:]...)
		done, attempt, err := activityCompleted(ctx, c, id, activityID)
		if err != nil {
			return nil, err
		}
		if attempt < 2 {
			return nil, fmt.Errorf("%s: lookup completed on attempt %d, not on a retry after the kill", id, attempt)
		}
		resumes = append(resumes, done.Sub(killed))
		_ = c.TerminateWorkflow(ctx, id, "", "bench: done") // it waits for approval now
	}
	sec := fmt.Sprintf("Kill → resume: a worker process (cmd worker) SIGKILLed once the hand example's lookup (AGENTRUN_DEMO_DELAY=%s) has started on it, while a second worker process polls the same queue; %s (the section took %s)", p.Delay, plural(p.Trials, "trial"), time.Since(began).Round(time.Second))
	hb := ms(workflows.HeartbeatTimeout)
	r := ms(median(resumes))
	return []row{
		{Section: sec, Figure: fmt.Sprintf("ms from SIGKILL until lookup completes on the other worker (ActivityTaskCompleted), minus the %s demo delay, vs the heartbeat timeout (median; expect the timeout plus the 1 s first retry interval)", p.Delay),
			Measured: r - ms(p.Delay), Baseline: hb, Unit: "ms", Goal: 1.5},
		{Section: sec, Figure: "ms from SIGKILL until lookup completes on the other worker, delay included, vs heartbeat timeout + delay (median)",
			Measured: r, Baseline: hb + ms(p.Delay), Unit: "ms"},
	}, nil
}

// startedCallTool waits until the run's CallTool activity has started on a
// worker and returns its activity id and the worker's identity.
func startedCallTool(ctx context.Context, c client.Client, id string) (activityID, identity string, err error) {
	deadline := time.Now().Add(killStepTimeout)
	for time.Now().Before(deadline) {
		desc, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return "", "", err
		}
		for _, a := range desc.RawResponse.GetPendingActivities() {
			if activities.Method(a.GetActivityType().GetName()) == "CallTool" && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && a.GetLastWorkerIdentity() != "" {
				return a.GetActivityId(), a.GetLastWorkerIdentity(), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", "", fmt.Errorf("%s: lookup did not start within %v", id, killStepTimeout)
}

// activityCompleted waits for the ActivityTaskCompleted event of the
// activity and returns its time and the attempt that completed.
func activityCompleted(ctx context.Context, c client.Client, id, activityID string) (time.Time, int, error) {
	deadline := time.Now().Add(killStepTimeout)
	for time.Now().Before(deadline) {
		var scheduled int64
		started := map[int64]int32{} // scheduled event id -> attempt
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return time.Time{}, 0, fmt.Errorf("history of %s: %w", id, err)
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if e.GetActivityTaskScheduledEventAttributes().GetActivityId() == activityID {
					scheduled = e.GetEventId()
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := e.GetActivityTaskStartedEventAttributes()
				started[a.GetScheduledEventId()] = a.GetAttempt()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if s := e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId(); s == scheduled && scheduled != 0 {
					return e.GetEventTime().AsTime(), int(started[s]), nil
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				if e.GetActivityTaskFailedEventAttributes().GetScheduledEventId() == scheduled && scheduled != 0 {
					return time.Time{}, 0, fmt.Errorf("%s: lookup failed after the kill", id)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				if e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId() == scheduled && scheduled != 0 {
					return time.Time{}, 0, fmt.Errorf("%s: lookup timed out for good after the kill", id)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}, 0, fmt.Errorf("%s: lookup did not complete within %v of the kill", id, killStepTimeout)
}
