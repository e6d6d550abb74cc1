package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchpb "go.temporal.io/api/batch/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// approvalBatchParams sizes the approval under load section.
type approvalBatchParams struct {
	// Runs is how many runs of each side park at once and are woken by
	// one batch signal (the 10,000 parked runs are this section at
	// Runs 10,000).
	Runs int
	// Parallel is how many starts and history reads are in flight at once.
	Parallel int
	// RSSBudget, when not 0, adds a row holding the AgentRun side's RSS
	// growth with Runs parked against this many MiB (goal ≤ 1).
	RSSBudget float64
	// Label names the section in the table. Default "Approval under load".
	Label string
	// Upserts adds a third side: the bare workflows upserting
	// AgentRunStatus as an approved AgentRun run does (Running at the
	// approval, Completed at the end), to say what those upserts cost.
	Upserts bool
}

// fleetTimeout bounds parking runs, and then their completions: a 2-core
// machine parks 1,000 hand-example runs in about a minute.
func fleetTimeout(runs int) time.Duration {
	return parkTimeout + time.Duration(runs)*60*time.Millisecond
}

// apSide is one side of the approval section and what it measured.
type apSide struct {
	name  string
	queue string
	// start starts the run id on the side's queue.
	start func(ctx context.Context, c client.Client, id string) error
	// check checks a completed run's result (nil: none).
	check func(ctx context.Context, c client.Client, id string) error

	batchToLast time.Duration   // the batch's start → the last run's completion
	spread      time.Duration   // the first run's signal → the last run's
	perRun      []time.Duration // per run: signaled → completed, sorted
	// CPU time of the dev server and of this process (the side's worker
	// and the bench's reads of each run's result) from the batch's start
	// until the bench had read every run's result; the histories are read
	// after.
	serverCPU, selfCPU, cpuWall time.Duration
	// The workflow tasks after the approval: their waits (scheduled →
	// started, sorted) and how many timed out, over all the runs.
	wftWaits    []time.Duration
	wftTimeouts int
	// This process's memory before the side's runs started (after a
	// collection that returned the free memory) and with all of them
	// parked; its VmRSS once all completed.
	before, parked memory
	rssAfter       float64
}

// approvalBatch parks Runs hand-example runs (AgentRun playing
// approvalScript on one in-process worker) on their file_request approval and
// wakes them all with one batch signal (StartBatchOperation with a signal
// operation, what `temporal workflow signal --query` starts), against Runs
// bare workflows on one worker of the same options that upsert the same
// status, wait for one approve signal and then run as many no-op
// activities as the approved run runs after its approval, woken the same
// way. Both batches select by `TaskQueue = "..." AND AgentRunStatus =
// "AwaitingApproval"`.
func approvalBatch(ctx context.Context, env *benchEnv, p approvalBatchParams) ([]row, error) {
	began := time.Now()
	stamp := runStamp()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	agentRun := &apSide{name: "agentrun", queue: "bench-apb-agentrun-" + stamp}
	agentRun.start = func(ctx context.Context, c client.Client, id string) error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: agentRun.queue}, workflows.WorkflowName, handInput)
		return err
	}
	agentRun.check = func(ctx context.Context, c client.Client, id string) error {
		var res workflows.Result
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			return err
		}
		if !strings.HasPrefix(res.Answer, "Your request is filed as REQ-") {
			return fmt.Errorf("agentrun %s: answer %q; want the script's filed request", id, res.Answer)
		}
		return nil
	}
	aClient, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer aClient.Close()
	aw, closeTools, err := newApprovalWorker(aClient, env, agentRun.queue, "approval-batch-solo")
	if err != nil {
		return nil, fmt.Errorf("agentrun worker: %w", err)
	}
	defer closeTools()
	if err := aw.Start(); err != nil {
		return nil, fmt.Errorf("agentrun worker: %w", err)
	}

	// One run alone first: its approval marker (the same for every
	// hand-example run) and how many activities an approved run runs.
	solo := fmt.Sprintf("bench-apb-agentrun-%s-solo", stamp)
	if err := agentRun.start(ctx, c, solo); err != nil {
		aw.Stop()
		return nil, err
	}
	if err := waitCount(ctx, c, awaitingApproval(agentRun.queue), 1, parkTimeout); err != nil {
		aw.Stop()
		return nil, err
	}
	marker, err := pendingMarker(ctx, c, solo)
	if err != nil {
		aw.Stop()
		return nil, err
	}
	if err := c.SignalWorkflow(ctx, solo, "", operator.SignalApprove, operator.ApprovePayload(marker)); err != nil {
		aw.Stop()
		return nil, err
	}
	if err := agentRun.check(ctx, c, solo); err != nil {
		aw.Stop()
		return nil, err
	}
	soloTimes, err := runTimes(ctx, c, solo)
	aw.Stop()
	if err != nil {
		return nil, err
	}
	after := soloTimes.afterSignal
	if after < 1 {
		return nil, fmt.Errorf("%s: no activity after its approval", solo)
	}

	bareSide := func(name string, upserts bool) *apSide {
		s := &apSide{name: name, queue: "bench-apb-" + name + "-" + stamp}
		s.start = func(ctx context.Context, c client.Client, id string) error {
			_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: s.queue}, bareApprovalName, after, upserts)
			return err
		}
		return s
	}
	bare, upserting := bareSide("bare", false), bareSide("bare-upserts", true)

	// Bare first, then AgentRun: each side's worker runs only during its
	// turn, on its own client.
	type turn struct {
		side   *apSide
		worker func(c client.Client) (worker.Worker, func() error, error)
	}
	turns := []turn{
		{bare, func(c client.Client) (worker.Worker, func() error, error) {
			return newBareApprovalWorker(c, bare.queue), func() error { return nil }, nil
		}},
	}
	if p.Upserts {
		turns = append(turns, turn{upserting, func(c client.Client) (worker.Worker, func() error, error) {
			return newBareApprovalWorker(c, upserting.queue), func() error { return nil }, nil
		}})
	}
	turns = append(turns, []turn{
		{agentRun, func(c client.Client) (worker.Worker, func() error, error) {
			return newApprovalWorker(c, env, agentRun.queue, "approval-batch")
		}},
	}...)
	for _, t := range turns {
		if err := t.side.measure(ctx, env, c, t.worker, stamp, marker, p); err != nil {
			return nil, fmt.Errorf("%s: %w", t.side.name, err)
		}
	}

	n := thousands(p.Runs)
	mib := func(b float64) float64 { return b / (1 << 20) }
	sec := fmt.Sprintf("%s: %s hand-example runs (their ticket a no-op write, file_request) on one worker park on approval and are approved by one batch signal (the query TaskQueue and AgentRunStatus = \"AwaitingApproval\") vs %s bare workflows on one worker of the same options that wait for one signal, woken by one batch signal, then run the %d activities an approved run runs (the section took %s)",
		cmp.Or(p.Label, "Approval under load"), n, n, after, time.Since(began).Round(time.Second))
	rows := []row{
		{Section: sec, Figure: fmt.Sprintf("ms from the batch's start to the last of %s runs completed", n),
			Measured: ms(agentRun.batchToLast), Baseline: ms(bare.batchToLast), Unit: "ms", Goal: 1.2},
		{Section: sec, Figure: "ms approve signal → run completed, p50 (from the histories)",
			Measured: ms(percentile(agentRun.perRun, 50)), Baseline: ms(percentile(bare.perRun, 50)), Unit: "ms"},
		{Section: sec, Figure: "ms approve signal → run completed, p99",
			Measured: ms(percentile(agentRun.perRun, 99)), Baseline: ms(percentile(bare.perRun, 99)), Unit: "ms"},
		{Section: sec, Figure: "ms the batch took to signal every run (first signal → last, the server's batcher and its worker.batcherRPS)",
			Measured: ms(agentRun.spread), Baseline: ms(bare.spread), Unit: "ms"},
		{Section: sec, Figure: "ms a workflow task after the approval waited for the worker (scheduled → started), p50",
			Measured: ms(percentile(agentRun.wftWaits, 50)), Baseline: ms(percentile(bare.wftWaits, 50)), Unit: "ms"},
		{Section: sec, Figure: "workflow tasks started after the approval per run",
			Measured: float64(len(agentRun.wftWaits)) / float64(p.Runs), Baseline: float64(len(bare.wftWaits)) / float64(p.Runs), Unit: "tasks"},
		{Section: sec, Figure: "workflow tasks after the approval that timed out on the worker's sticky queue (its 5s StickyScheduleToStartTimeout) and went to the task queue, where a worker replays the run's history, per run",
			Measured: float64(agentRun.wftTimeouts) / float64(p.Runs), Baseline: float64(bare.wftTimeouts) / float64(p.Runs), Unit: "tasks"},
		{Section: sec, Figure: "ms of the dev server's CPU per approved run (user + system, from the batch's start until the bench had read every run's result)",
			Measured: ms(agentRun.serverCPU) / float64(p.Runs), Baseline: ms(bare.serverCPU) / float64(p.Runs), Unit: "ms"},
		{Section: sec, Figure: "ms of this process's CPU per approved run (its worker, and the bench reading each run's result), over the same time",
			Measured: ms(agentRun.selfCPU) / float64(p.Runs), Baseline: ms(bare.selfCPU) / float64(p.Runs), Unit: "ms"},
		{Section: sec, Figure: "cores the dev server kept busy over the same time (its CPU time over that time; the machine has " + strconv.Itoa(runtime.NumCPU()) + ")",
			Measured: agentRun.serverCPU.Seconds() / agentRun.cpuWall.Seconds(), Baseline: bare.serverCPU.Seconds() / bare.cpuWall.Seconds(), Unit: "cores"},
		{Section: sec, Figure: fmt.Sprintf("worker VmRSS growth with %s runs parked (this process: parked − before the runs started)", n),
			Measured: mib(agentRun.parked.rss - agentRun.before.rss), Baseline: mib(bare.parked.rss - bare.before.rss), Unit: "MiB"},
		{Section: sec, Figure: "KB of Go heap in use per parked run (runtime.MemStats.HeapInuse after a collection: parked − before, over the runs)",
			Measured: agentRun.perRunKB(func(m memory) float64 { return m.heap }, p.Runs), Baseline: bare.perRunKB(func(m memory) float64 { return m.heap }, p.Runs), Unit: "KB"},
		{Section: sec, Figure: "KB of live Go heap objects per parked run (runtime.MemStats.HeapAlloc after a collection: parked − before, over the runs)",
			Measured: agentRun.perRunKB(func(m memory) float64 { return m.live }, p.Runs), Baseline: bare.perRunKB(func(m memory) float64 { return m.live }, p.Runs), Unit: "KB"},
		{Section: sec, Figure: "KB of goroutine stacks in use per parked run (runtime.MemStats.StackInuse: parked − before, over the runs)",
			Measured: agentRun.perRunKB(func(m memory) float64 { return m.stacks }, p.Runs), Baseline: bare.perRunKB(func(m memory) float64 { return m.stacks }, p.Runs), Unit: "KB"},
		{Section: sec, Figure: "goroutines per parked run (runtime.NumGoroutine: parked − before, over the runs; a workflow coroutine is one)",
			Measured: agentRun.growth(func(m memory) float64 { return m.goroutines }, p.Runs), Baseline: bare.growth(func(m memory) float64 { return m.goroutines }, p.Runs), Unit: "goroutines"},
		{Section: sec, Figure: fmt.Sprintf("worker VmRSS growth once %s runs completed (after − before)", n),
			Measured: mib(agentRun.rssAfter - agentRun.before.rss), Baseline: mib(bare.rssAfter - bare.before.rss), Unit: "MiB"},
	}
	if p.Upserts {
		rows = append(rows,
			row{Section: sec, Figure: fmt.Sprintf("ms from the batch's start to the last of %s runs completed, bare workflows that also upsert AgentRunStatus as an approved run does (Running at the approval, Completed at the end) vs the bare workflows: what the two upserts cost", n),
				Measured: ms(upserting.batchToLast), Baseline: ms(bare.batchToLast), Unit: "ms"},
			row{Section: sec, Figure: "ms of the dev server's CPU per approved run, bare workflows that also upsert vs the bare workflows",
				Measured: ms(upserting.serverCPU) / float64(p.Runs), Baseline: ms(bare.serverCPU) / float64(p.Runs), Unit: "ms"},
			row{Section: sec, Figure: "ms from the batch's start to the last run completed, AgentRun vs the bare workflows that also upsert: what the rest of AgentRun costs",
				Measured: ms(agentRun.batchToLast), Baseline: ms(upserting.batchToLast), Unit: "ms"},
			row{Section: sec, Figure: "workflow tasks after the approval that timed out on the worker's sticky queue per run, bare workflows that also upsert (AgentRun's and the bare workflows' are above)",
				Measured: float64(upserting.wftTimeouts) / float64(p.Runs), Baseline: float64(bare.wftTimeouts) / float64(p.Runs), Unit: "tasks"},
		)
	}
	if p.RSSBudget > 0 {
		rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("worker VmRSS growth with %s AgentRun runs parked vs the budget", n),
			Measured: mib(agentRun.parked.rss - agentRun.before.rss), Baseline: p.RSSBudget, Unit: "MiB", Goal: 1})
	}
	return rows, nil
}

// growth is how much of the side's memory grew with its runs parked, per
// run; perRunKB is that in KB (1,000 bytes).
func (s *apSide) growth(of func(memory) float64, runs int) float64 {
	return (of(s.parked) - of(s.before)) / float64(max(runs, 1))
}

func (s *apSide) perRunKB(of func(memory) float64, runs int) float64 {
	return s.growth(of, runs) / 1000
}

// measure parks Runs runs of the side on a new worker, wakes them with one
// batch signal and records the side's figures.
func (s *apSide) measure(ctx context.Context, env *benchEnv, c client.Client, newWorker func(client.Client) (worker.Worker, func() error, error), stamp, marker string, p approvalBatchParams) error {
	wc, err := env.dial(nil)
	if err != nil {
		return err
	}
	defer wc.Close()
	w, release, err := newWorker(wc)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer release()
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer w.Stop()

	ids := make([]string, p.Runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-apb-%s-%s-%d", s.name, stamp, i)
	}
	runtime.GC()
	debug.FreeOSMemory()
	if s.before, err = measureMemory(""); err != nil {
		return err
	}
	if err := forEach(ctx, ids, p.Parallel, func(id string) error { return s.start(ctx, c, id) }); err != nil {
		return err
	}
	// The solo run of the AgentRun side completed, so it no longer
	// matches: exactly Runs runs await approval.
	query := awaitingApproval(s.queue)
	if err := waitCount(ctx, c, query, p.Runs, fleetTimeout(p.Runs)); err != nil {
		return err
	}
	if s.parked, err = measureMemory(env.heapProfile(fmt.Sprintf("%d-%s", p.Runs, s.name))); err != nil {
		return err
	}
	server := devServerPID(env.hostPort)
	self0, srv0, err := cpuTimes(server)
	if err != nil {
		return err
	}
	batchBegan := time.Now()
	if err := batchSignal(ctx, c, query, "bench-apb-"+s.name+"-"+stamp, marker); err != nil {
		return err
	}

	wctx, cancel := context.WithTimeout(ctx, fleetTimeout(p.Runs))
	defer cancel()
	// Every run's result first, then their histories: reading a history
	// is work for the server, which must not compete with the runs it
	// measures (an AgentRun history is longer than a bare one).
	if err := forEach(wctx, ids, p.Parallel, func(id string) error {
		if s.check != nil {
			return s.check(wctx, c, id)
		}
		if err := c.GetWorkflow(wctx, id, "").Get(wctx, nil); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		return nil
	}); err != nil {
		return err
	}
	self1, srv1, err := cpuTimes(server)
	if err != nil {
		return err
	}
	s.serverCPU, s.selfCPU, s.cpuWall = srv1-srv0, self1-self0, time.Since(batchBegan)
	var mu sync.Mutex
	var last, firstSig, lastSig time.Time
	if err := forEach(wctx, ids, p.Parallel, func(id string) error {
		t, err := runTimes(wctx, c, id)
		if err != nil {
			return err
		}
		if t.signaled.IsZero() {
			return fmt.Errorf("history of %s: no signal", id)
		}
		mu.Lock()
		defer mu.Unlock()
		if t.completed.After(last) {
			last = t.completed
		}
		if firstSig.IsZero() || t.signaled.Before(firstSig) {
			firstSig = t.signaled
		}
		if t.signaled.After(lastSig) {
			lastSig = t.signaled
		}
		s.perRun = append(s.perRun, t.completed.Sub(t.signaled))
		s.wftWaits = append(s.wftWaits, t.wftWaits...)
		s.wftTimeouts += t.wftTimeouts
		return nil
	}); err != nil {
		return err
	}
	slices.Sort(s.perRun)
	slices.Sort(s.wftWaits)
	s.batchToLast, s.spread = last.Sub(batchBegan), lastSig.Sub(firstSig)
	s.rssAfter, err = selfRSS()
	return err
}

// awaitingApproval is the visibility query of the runs on queue that
// await approval.
func awaitingApproval(queue string) string {
	return fmt.Sprintf("TaskQueue = %q AND %s = %q", queue, operator.StatusAttribute, string(agent.StatusAwaitingApproval))
}

// waitCount waits until at least n runs match query (visibility), for at
// most timeout.
func waitCount(ctx context.Context, c client.Client, query string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var have int64
	for time.Now().Before(deadline) {
		r, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil {
			return fmt.Errorf("count runs (%s): %w", query, err)
		}
		if have = r.GetCount(); have >= int64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%d of %d runs match %s after %v", have, n, query, timeout)
}

// batchSignal starts one batch operation that sends the approve signal,
// with the payload operator.ApprovePayload(marker) (no digest: accepted),
// to every run query selects: what `temporal workflow signal --query ...
// --name approve --input '{"Marker":"..."}'` starts. It returns once the
// server has accepted the job; the signals follow at the server's batcher
// rate.
func batchSignal(ctx context.Context, c client.Client, query, jobID, marker string) error {
	input, err := converter.GetDefaultDataConverter().ToPayloads(operator.ApprovePayload(marker))
	if err != nil {
		return err
	}
	_, err = c.WorkflowService().StartBatchOperation(ctx, &workflowservice.StartBatchOperationRequest{
		Namespace:       "default",
		VisibilityQuery: query,
		JobId:           jobID,
		Reason:          "bench: approval under load",
		Operation: &workflowservice.StartBatchOperationRequest_SignalOperation{SignalOperation: &batchpb.BatchOperationSignal{
			Signal:   operator.SignalApprove,
			Input:    input,
			Identity: "agentrun-bench",
		}},
	})
	if err != nil {
		return fmt.Errorf("batch signal %s: %w", jobID, err)
	}
	return nil
}
