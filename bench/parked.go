package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// parkedParams sizes the parked approvals section.
type parkedParams struct {
	// Runs is how many hand-example runs park on approval at once.
	Runs int
	// Parallel is how many starts, approvals and history reads are in
	// flight at once.
	Parallel int
}

// parkTimeout bounds waiting for all runs to park, and then to complete;
// a 2-core machine parks 1,000 runs in about a minute.
const parkTimeout = 5 * time.Minute

// idleSettle is how long the worker idles before its RSS is the baseline.
const idleSettle = time.Second

// parkedApprovals starts Runs hand-example runs on one worker process,
// waits until all of them await approval (the AgentRunStatus search
// attribute), approves them all through the approve update, Parallel at a
// time, and measures approve → completed per run from each history (the
// WorkflowExecutionUpdateAccepted event to the WorkflowExecutionCompleted
// event), against one run approved alone on the same idle worker first;
// and the worker's VmRSS at the end against the idle worker's.
func parkedApprovals(ctx context.Context, env *benchEnv, workerBin string, p parkedParams) ([]row, error) {
	began := time.Now()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stamp := runStamp()
	queue := "bench-park-" + stamp
	w, err := startWorker(ctx, workerBin, env.workerEnv(queue, env.subdir("park-journal"), 0))
	if err != nil {
		return nil, err
	}
	defer w.Stop(workerStopTimeout)
	time.Sleep(idleSettle)
	idleRSS, err := rss(w)
	if err != nil {
		return nil, err
	}
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: hand.Prompt}}}
	start := func(id string) error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.WorkflowName, input)
		return err
	}
	parked := func(ids []string) error {
		return waitParked(ctx, c, queue, len(ids))
	}

	// One run alone: the baseline.
	solo := []string{fmt.Sprintf("bench-park-%s-solo", stamp)}
	if err := start(solo[0]); err != nil {
		return nil, err
	}
	if err := parked(solo); err != nil {
		return nil, err
	}
	marker, err := pendingMarker(ctx, c, solo[0])
	if err != nil {
		return nil, err
	}
	if err := approveAll(ctx, c, solo, marker, 1); err != nil {
		return nil, err
	}
	soloTimes, err := approveToCompleted(ctx, c, solo, 1)
	if err != nil {
		return nil, err
	}

	// The fleet.
	ids := make([]string, p.Runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-park-%s-%d", stamp, i)
	}
	parkBegan := time.Now()
	if err := forEach(ctx, ids, p.Parallel, start); err != nil {
		return nil, err
	}
	if err := parked(ids); err != nil {
		return nil, err
	}
	parkedRSS, err := rss(w)
	if err != nil {
		return nil, err
	}
	parking, approveBegan := time.Since(parkBegan), time.Now()
	if err := approveAll(ctx, c, ids, marker, p.Parallel); err != nil {
		return nil, err
	}
	times, err := approveToCompleted(ctx, c, ids, p.Parallel)
	if err != nil {
		return nil, err
	}
	endRSS, err := rss(w)
	if err != nil {
		return nil, err
	}
	approving := time.Since(approveBegan)
	slices.Sort(times)
	p50, p99 := percentile(times, 50), percentile(times, 99)
	n := thousands(p.Runs)
	sec := fmt.Sprintf("Parked approvals: %s hand-example runs on one worker process (cmd worker, FileStore journal) wait for approval at once, then are approved through the approve update, %d at a time (the section took %s: starting until all wait %s, approving until all completed %s)",
		n, p.Parallel, time.Since(began).Round(time.Second), parking.Round(time.Second), approving.Round(time.Second))
	mb := func(b float64) float64 { return b / (1 << 20) }
	return []row{
		{Section: sec, Figure: fmt.Sprintf("ms approve → completed, p50 of %s runs vs one run approved alone (update accepted → run completed, from the histories)", n),
			Measured: ms(p50), Baseline: ms(soloTimes[0]), Unit: "ms"},
		{Section: sec, Figure: fmt.Sprintf("ms approve → completed, p99 vs p50 of %s runs", n),
			Measured: ms(p99), Baseline: ms(p50), Unit: "ms"},
		{Section: sec, Figure: fmt.Sprintf("worker VmRSS with %s runs parked vs the idle worker", n),
			Measured: mb(parkedRSS), Baseline: mb(idleRSS), Unit: "MiB"},
		{Section: sec, Figure: fmt.Sprintf("worker VmRSS after %s runs completed vs the idle worker", n),
			Measured: mb(endRSS), Baseline: mb(idleRSS), Unit: "MiB"},
	}, nil
}

// waitParked waits until n runs on queue await approval.
func waitParked(ctx context.Context, c client.Client, queue string, n int) error {
	q := fmt.Sprintf("TaskQueue = %q AND %s = %q", queue, operator.StatusAttribute, string(agent.StatusAwaitingApproval))
	deadline := time.Now().Add(parkTimeout)
	var have int64
	for time.Now().Before(deadline) {
		r, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
		if err != nil {
			return fmt.Errorf("count parked runs: %w", err)
		}
		if have = r.GetCount(); have >= int64(n) {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%d of %d runs await approval after %v", have, n, parkTimeout)
}

// pendingMarker asks a parked run (the state query) for its pending
// approval's marker; every hand-example run has the same.
func pendingMarker(ctx context.Context, c client.Client, id string) (string, error) {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
	if err != nil {
		return "", err
	}
	var st workflows.State
	if err := v.Get(&st); err != nil {
		return "", err
	}
	if len(st.Pending) != 1 {
		return "", fmt.Errorf("%s: %d pending approvals, want 1", id, len(st.Pending))
	}
	return st.Pending[0].Marker, nil
}

// approveAll approves every run through the approve update, waiting for
// each update to be accepted.
func approveAll(ctx context.Context, c client.Client, ids []string, marker string, parallel int) error {
	return forEach(ctx, ids, parallel, func(id string) error {
		_, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID:   id,
			UpdateID:     "bench-approve",
			UpdateName:   operator.SignalApprove,
			Args:         []any{operator.ApprovePayload(marker)},
			WaitForStage: client.WorkflowUpdateStageAccepted,
		})
		if err != nil {
			return fmt.Errorf("approve %s: %w", id, err)
		}
		return nil
	})
}

// approveToCompleted waits for each run to complete and returns, per run,
// the time from its update's acceptance to its completion, from its
// history.
func approveToCompleted(ctx context.Context, c client.Client, ids []string, parallel int) ([]time.Duration, error) {
	var mu sync.Mutex
	var times []time.Duration
	wctx, cancel := context.WithTimeout(ctx, parkTimeout)
	defer cancel()
	err := forEach(wctx, ids, parallel, func(id string) error {
		if err := c.GetWorkflow(wctx, id, "").Get(wctx, nil); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		var accepted, completed time.Time
		it := c.GetWorkflowHistory(wctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return fmt.Errorf("history of %s: %w", id, err)
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
				accepted = e.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				completed = e.GetEventTime().AsTime()
			}
		}
		if accepted.IsZero() || completed.IsZero() {
			return fmt.Errorf("history of %s: no update accepted or no completion", id)
		}
		mu.Lock()
		times = append(times, completed.Sub(accepted))
		mu.Unlock()
		return nil
	})
	return times, err
}

// forEach calls fn on every id, parallel at a time, and returns the first
// error.
func forEach(ctx context.Context, ids []string, parallel int, fn func(id string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if err := fn(id); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for _, id := range ids {
		select {
		case work <- id:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// percentile returns the p-th percentile of sorted ds (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}
