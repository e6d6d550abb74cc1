package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/workflows"
)

// saturationParams sizes the saturation throughput section.
type saturationParams struct {
	// Runs is N, the runs of each side in flight at once on one worker.
	Runs int
	// Turns is T, each AgentRun run's lookup turns (a final text turn
	// follows); a bare chain runs as many activities (activityCount).
	Turns int
	// Rounds is how many rounds of both sides run, the side that goes
	// first alternating, after one warm-up run of each.
	Rounds int
	// Parallel is how many starts and history reads are in flight at once.
	Parallel int
}

// saturationTimeout bounds one side's round, from the first start to the
// last completion.
const saturationTimeout = 10 * time.Minute

// satSide is one side of the saturation section: how to start its worker
// and one run on it, and what its rounds measured.
type satSide struct {
	name  string
	queue string
	// worker returns a new worker of this side on c (started by the
	// caller) and what to release once it has stopped.
	worker func(c client.Client) (worker.Worker, func() error, error)
	// start starts the run id; check, when not nil, checks its result.
	start func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error)
	check func(ctx context.Context, r client.WorkflowRun) error

	walls  []time.Duration // per round: first start → last completion
	cpus   []time.Duration // per round: the process's CPU time, user + system
	steps  []time.Duration // activity scheduled → completed, every activity of every round
	cycles []time.Duration // activity scheduled → next activity scheduled
}

// saturation runs Runs AgentRun runs of Turns lookup turns at once on one
// worker, against Runs bare chains of as many no-op activities at once on
// one worker of the same options (both built by newAgentWorker and
// newBareWorker: worker.Options{}, in this process), a round of each side
// alternating which goes first. Each side's worker runs only during its
// round, so the process's CPU time over the round (getrusage: the worker
// and the driver's starts and waits, the same on both sides) is that
// side's.
func saturation(ctx context.Context, env *benchEnv, p saturationParams) ([]row, error) {
	began := time.Now()
	n := activityCount(p.Turns)
	stamp := runStamp()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	bare := &satSide{name: "bare", queue: "bench-sat-bare-" + stamp}
	bare.worker = func(c client.Client) (worker.Worker, func() error, error) {
		return newBareWorker(c, bare.queue), func() error { return nil }, nil
	}
	bare.start = func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error) {
		return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: bare.queue}, bareWorkflowName, n)
	}
	agentRun := &satSide{name: "agentrun", queue: "bench-sat-agentrun-" + stamp}
	agentRun.worker = func(c client.Client) (worker.Worker, func() error, error) {
		return newAgentWorker(c, agentRun.queue, agentScript(p.Turns), env.subdir("saturation-agentrun"), nil, env.logger, agentOptions{})
	}
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: "Which of my policies changed?"}}, MaxTurns: p.Turns + 1}
	agentRun.start = func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error) {
		return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: agentRun.queue}, workflows.WorkflowName, input)
	}
	agentRun.check = func(ctx context.Context, r client.WorkflowRun) error {
		var res workflows.Result
		if err := r.Get(ctx, &res); err != nil {
			return err
		}
		if res.Steps != n-1 || !strings.HasPrefix(res.Answer, "Done: ") {
			return fmt.Errorf("agentrun %s: %d steps, answer %q; want %d steps and the script's answer", r.GetID(), res.Steps, res.Answer, n-1)
		}
		return nil
	}

	// Round 0 is one run of each side, the warm-up, not counted.
	for round := 0; round <= p.Rounds; round++ {
		order := []*satSide{bare, agentRun}
		if round%2 == 0 {
			order = []*satSide{agentRun, bare}
		}
		for _, s := range order {
			runs := p.Runs
			if round == 0 {
				runs = 1
			}
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = fmt.Sprintf("bench-sat-%s-%s-%d-%d", s.name, stamp, round, i)
			}
			if err := s.round(ctx, env, c, ids, p.Parallel, round > 0); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round, s.name, err)
			}
		}
	}

	total := float64(p.Runs * n)
	sec := fmt.Sprintf("Saturation: %s AgentRun runs (T=%d lookup turns, %d activities each) at once on one worker vs %s bare chains of %d no-op activities at once on one worker of the same options, %s alternating (the section took %s)",
		thousands(p.Runs), p.Turns, n, thousands(p.Runs), n, plural(p.Rounds, "round"), time.Since(began).Round(time.Second))
	aWall, bWall := median(agentRun.walls), median(bare.walls)
	perStep := func(cpus []time.Duration) float64 { return ms(median(cpus)) / total }
	slices.Sort(agentRun.steps)
	slices.Sort(bare.steps)
	slices.Sort(agentRun.cycles)
	slices.Sort(bare.cycles)
	return []row{
		{Section: sec, Figure: fmt.Sprintf("s wall time, first start → last completion of all %s runs (median of rounds)", thousands(p.Runs)),
			Measured: aWall.Seconds(), Baseline: bWall.Seconds(), Unit: "s", Goal: 1.15},
		{Section: sec, Figure: "activities per second over the wall time",
			Measured: total / aWall.Seconds(), Baseline: total / bWall.Seconds()},
		{Section: sec, Figure: "worker CPU ms per activity (the process's user + system time over the round, getrusage)",
			Measured: perStep(agentRun.cpus), Baseline: perStep(bare.cpus), Unit: "ms", Goal: 1.25},
		{Section: sec, Figure: "ms activity scheduled → completed under load, p50 (from the histories)",
			Measured: ms(percentile(agentRun.steps, 50)), Baseline: ms(percentile(bare.steps, 50)), Unit: "ms"},
		{Section: sec, Figure: "ms activity scheduled → completed under load, p99",
			Measured: ms(percentile(agentRun.steps, 99)), Baseline: ms(percentile(bare.steps, 99)), Unit: "ms"},
		{Section: sec, Figure: "ms activity scheduled → next activity scheduled under load, p50",
			Measured: ms(percentile(agentRun.cycles, 50)), Baseline: ms(percentile(bare.cycles, 50)), Unit: "ms"},
		{Section: sec, Figure: "ms activity scheduled → next activity scheduled under load, p99",
			Measured: ms(percentile(agentRun.cycles, 99)), Baseline: ms(percentile(bare.cycles, 99)), Unit: "ms"},
	}, nil
}

// round starts the side's worker, starts every run of ids, waits for them
// all to complete and, when count, records the round's figures.
func (s *satSide) round(ctx context.Context, env *benchEnv, c client.Client, ids []string, parallel int, count bool) error {
	wc, err := env.dial(nil)
	if err != nil {
		return err
	}
	defer wc.Close()
	w, release, err := s.worker(wc)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer release()
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(ctx, saturationTimeout)
	defer cancel()
	cpu0, err := processCPU()
	if err != nil {
		return err
	}
	began := time.Now()
	var mu sync.Mutex
	runs := map[string]client.WorkflowRun{}
	if err := forEach(ctx, ids, parallel, func(id string) error {
		r, err := s.start(ctx, c, id)
		if err != nil {
			return fmt.Errorf("start %s: %w", id, err)
		}
		mu.Lock()
		runs[id] = r
		mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	// Wait for every run at once, so that the last completion is seen as
	// it happens (the CPU time ends there).
	if err := forEach(ctx, ids, len(ids), func(id string) error {
		r := runs[id]
		if s.check != nil {
			return s.check(ctx, r)
		}
		return r.Get(ctx, nil)
	}); err != nil {
		return err
	}
	cpu1, err := processCPU()
	if err != nil {
		return err
	}
	if !count {
		return nil
	}
	var last time.Time
	if err := forEach(ctx, ids, parallel, func(id string) error {
		t, err := runTimes(ctx, c, id)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if t.completed.After(last) {
			last = t.completed
		}
		s.steps = append(s.steps, t.steps...)
		s.cycles = append(s.cycles, t.cycles...)
		return nil
	}); err != nil {
		return err
	}
	s.walls = append(s.walls, last.Sub(began))
	s.cpus = append(s.cpus, cpu1-cpu0)
	return nil
}

// processCPU returns the user + system CPU time this process has used
// (getrusage RUSAGE_SELF: every thread, not the dev server, a child).
func processCPU() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}

// runTiming is what one run's history says about its timing.
type runTiming struct {
	steps     []time.Duration // per activity: scheduled → completed
	cycles    []time.Duration // activity scheduled → next activity scheduled
	signaled  time.Time       // the first signal (zero: none)
	completed time.Time       // the run's completion (zero: not completed)
	// afterSignal counts the activities scheduled after the first signal.
	afterSignal int
}

// runTimes reads the history of the run id.
func runTimes(ctx context.Context, c client.Client, id string) (runTiming, error) {
	var t runTiming
	scheduled := map[int64]time.Time{}
	var lastSched time.Time
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return t, fmt.Errorf("history of %s: %w", id, err)
		}
		t.add(e, scheduled, &lastSched)
	}
	if t.completed.IsZero() {
		return t, fmt.Errorf("history of %s: the run did not complete", id)
	}
	return t, nil
}

func (t *runTiming) add(e *historypb.HistoryEvent, scheduled map[int64]time.Time, lastSched *time.Time) {
	at := e.GetEventTime().AsTime()
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		scheduled[e.GetEventId()] = at
		if !lastSched.IsZero() {
			t.cycles = append(t.cycles, at.Sub(*lastSched))
		}
		*lastSched = at
		if !t.signaled.IsZero() {
			t.afterSignal++
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		if s, ok := scheduled[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
			t.steps = append(t.steps, at.Sub(s))
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
		if t.signaled.IsZero() {
			t.signaled = at
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		t.completed = at
	}
}
