package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	// set changes the options of this side's clients, the worker's and
	// the driver's (nil: the sdk's defaults, gzip).
	set func(*client.Options)
	// worker returns a new worker of this side on c (started by the
	// caller) and what to release once it has stopped.
	worker func(c client.Client) (worker.Worker, func() error, error)
	// start starts the run id; check, when not nil, checks its result.
	start func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error)
	check func(ctx context.Context, r client.WorkflowRun) error

	walls  []time.Duration // per round: first start → last completion
	cpus   []time.Duration // per round: the process's CPU time, user + system
	server []time.Duration // per round: the dev server's CPU time (none: not found)
	steps  []time.Duration // activity scheduled → completed, every activity of every round
	cycles []time.Duration // activity scheduled → next activity scheduled
}

// saturation runs Runs AgentRun runs of Turns lookup turns at once on one
// worker, against Runs bare chains of as many no-op activities at once on
// one worker of the same options (both built by newAgentWorker and
// newBareWorker: worker.Options{}, in this process), a round of each side
// alternating which goes first, each round on a dev server of its own
// (satRound). Each side's worker runs only during its turn, so the
// process's CPU time over the turn (getrusage: the worker and the driver's
// starts and waits, the same on both sides) is that side's. The same pair
// runs again with gRPC compression off on every client of both sides
// (client.GrpcCompressionNone on the driver's and the worker's; the sdk's
// default is gzip), in the same rounds: what gzip costs each side, in
// this process and in the dev server's (its CPU time from /proc, when
// this process started it).
func saturation(ctx context.Context, env *benchEnv, p saturationParams) ([]row, error) {
	began := time.Now()
	n := activityCount(p.Turns)
	stamp := runStamp()

	bare, agentRun := satSides(env, p, n, stamp, "", nil)
	bareOff, agentRunOff := satSides(env, p, n, stamp, "-nogzip", func(o *client.Options) {
		o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	})
	sides := []*satSide{bare, agentRun, agentRunOff, bareOff}
	var servers []int // the rounds' dev server pids (0: not found, no server rows)
	var stalls []string
	for round := 1; round <= p.Rounds; round++ {
		marks := make([]satMark, len(sides))
		for i, s := range sides {
			marks[i] = s.mark()
		}
		pid, err := satRound(ctx, env, p, stamp, round, sides)
		if err != nil {
			return nil, err
		}
		if stall := satStall([2]*satSide{bare, agentRun}, [2]*satSide{bareOff, agentRunOff}); stall != "" && len(stalls) < maxStalls {
			// Measured again on a new server; the section says so.
			stalls = append(stalls, fmt.Sprintf("round %d (%s)", round, stall))
			for i, s := range sides {
				s.reset(marks[i])
			}
			round--
			continue
		}
		servers = append(servers, pid)
	}

	total := float64(p.Runs * n)
	sec := fmt.Sprintf("Saturation: %s AgentRun runs (T=%d lookup turns, %d activities each) at once on one worker vs %s bare chains of %d no-op activities at once on one worker of the same options, %s alternating, each on a dev server of its own, with the sdk's gRPC gzip and with it off (the section took %s)",
		thousands(p.Runs), p.Turns, n, thousands(p.Runs), n, plural(p.Rounds, "round"), time.Since(began).Round(time.Second))
	if len(stalls) > 0 {
		sec += "; measured again after a stall: " + strings.Join(stalls, ", ")
	}
	aWall, bWall := median(agentRun.walls), median(bare.walls)
	perStep := func(cpus []time.Duration) float64 { return ms(median(cpus)) / total }
	slices.Sort(agentRun.steps)
	slices.Sort(bare.steps)
	slices.Sort(agentRun.cycles)
	slices.Sort(bare.cycles)
	const off = "gRPC compression off on both sides (client.GrpcCompressionNone on the driver's and the worker's clients)"
	rows := []row{
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
		{Section: sec, Figure: "s wall time, " + off + ", AgentRun vs bare",
			Measured: median(agentRunOff.walls).Seconds(), Baseline: median(bareOff.walls).Seconds(), Unit: "s"},
		{Section: sec, Figure: "worker CPU ms per activity, " + off + ", AgentRun vs bare",
			Measured: perStep(agentRunOff.cpus), Baseline: perStep(bareOff.cpus), Unit: "ms"},
		{Section: sec, Figure: "AgentRun's worker CPU ms per activity, gzip (the sdk's default) vs compression off: what gzip costs it",
			Measured: perStep(agentRun.cpus), Baseline: perStep(agentRunOff.cpus), Unit: "ms"},
		{Section: sec, Figure: "the bare chains' worker CPU ms per activity, gzip vs compression off",
			Measured: perStep(bare.cpus), Baseline: perStep(bareOff.cpus), Unit: "ms"},
	}
	serverRow := func(figure string, gz, none *satSide) row {
		r := row{Section: sec, Figure: figure, Measured: perStep(gz.server), Baseline: perStep(none.server), Unit: "ms"}
		if slices.Contains(servers, 0) {
			r.Missing = "not measured: the dev server is not a child process of the bench"
		}
		return r
	}
	return append(rows,
		serverRow("dev server CPU ms per activity of AgentRun's runs, gzip vs compression off (/proc/PID/stat of the server process over the round)", agentRun, agentRunOff),
		serverRow("dev server CPU ms per activity of the bare chains, gzip vs compression off", bare, bareOff)), nil
}

// satRound runs round (1 on) of the saturation section on a dev server
// of its own, stopped at its end: a warm-up run of each side, not counted,
// then each side's Runs runs, in the order of sides, reversed in even
// rounds, so that every side's mean place is the same and each compared
// pair runs next to each other. It returns the pid of the round's server
// (0: not found). A server of its own, because a round's activities leave
// a timer each on the server that fires workflows.StepTimeout (10 min)
// after the activity started; at full size the next round would meet
// them, on the same server or on the same cores.
func satRound(ctx context.Context, env *benchEnv, p saturationParams, stamp string, round int, sides []*satSide) (int, error) {
	hostPort, stop, err := env.devServer(ctx)
	if err != nil {
		return 0, fmt.Errorf("round %d: %w", round, err)
	}
	defer stop()
	renv := *env
	renv.hostPort = hostPort
	server := devServerPID(hostPort)
	order := slices.Clone(sides)
	if round%2 == 0 {
		slices.Reverse(order)
	}
	for _, warmUp := range []bool{true, false} {
		for _, s := range order {
			runs, what := p.Runs, "measured"
			if warmUp {
				runs, what = 1, "warm-up"
			}
			ids := make([]string, runs)
			for i := range ids {
				ids[i] = fmt.Sprintf("bench-sat-%s-%s-%d-%s-%d", s.name, stamp, round, what, i)
			}
			if err := s.round(ctx, &renv, server, ids, p.Parallel, !warmUp); err != nil {
				return 0, fmt.Errorf("round %d, %s, %s: %w", round, s.name, what, err)
			}
		}
	}
	return server, nil
}

// satSides are the bare and the AgentRun side of the saturation section,
// their names and queues ending in suffix, their clients' options changed
// by set (nil: none).
func satSides(env *benchEnv, p saturationParams, n int, stamp, suffix string, set func(*client.Options)) (bare, agentRun *satSide) {
	bare = &satSide{name: "bare" + suffix, queue: "bench-sat-bare" + suffix + "-" + stamp, set: set}
	bare.worker = func(c client.Client) (worker.Worker, func() error, error) {
		return newBareWorker(c, bare.queue), func() error { return nil }, nil
	}
	bare.start = func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error) {
		return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: bare.queue}, bareWorkflowName, n)
	}
	agentRun = &satSide{name: "agentrun" + suffix, queue: "bench-sat-agentrun" + suffix + "-" + stamp, set: set}
	agentRun.worker = func(c client.Client) (worker.Worker, func() error, error) {
		return newAgentWorker(c, agentRun.queue, agentScript(p.Turns), env.subdir("saturation-"+agentRun.name), nil, env.logger, agentOptions{})
	}
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: "Which of my policies changed?"}}, MaxTurns: p.Turns + 1}
	agentRun.start = func(ctx context.Context, c client.Client, id string) (client.WorkflowRun, error) {
		return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: agentRun.queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, input)
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
	return bare, agentRun
}

// round starts the side's worker, starts every run of ids, waits for them
// all to complete and, when count, records the round's figures; server is
// the dev server's pid (0: its CPU time is not read).
func (s *satSide) round(ctx context.Context, env *benchEnv, server int, ids []string, parallel int, count bool) error {
	c, err := env.dialWith(nil, s.set) // the driver's: starts, waits, histories
	if err != nil {
		return err
	}
	defer c.Close()
	wc, err := env.dialWith(nil, s.set)
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
	cpu0, srv0, err := cpuTimes(server)
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
	cpu1, srv1, err := cpuTimes(server)
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
	s.server = append(s.server, srv1-srv0)
	return nil
}

// stallRatio is how many times longer than the side it is compared with
// a side's round must take to count as stalled: the sides differ by a
// fifth or so, and a stall (a dev server that kept tasks from the worker
// for a minute, seen once in the quick run) by tens of times.
const stallRatio = 4

// maxStalls bounds how often the section measures a stalled round again.
const maxStalls = 2

// satStall describes the first pair of sides whose last rounds differ by
// more than stallRatio ("bare-nogzip 64.0 s against agentrun-nogzip
// 2.1 s"), or "".
func satStall(pairs ...[2]*satSide) string {
	for _, pair := range pairs {
		a, b := pair[0], pair[1]
		if len(a.walls) == 0 || len(b.walls) == 0 {
			continue
		}
		wa, wb := a.walls[len(a.walls)-1], b.walls[len(b.walls)-1]
		if wa > stallRatio*wb || wb > stallRatio*wa {
			return fmt.Sprintf("%s %.1f s against %s %.1f s", a.name, wa.Seconds(), b.name, wb.Seconds())
		}
	}
	return ""
}

// satMark is how much a side had measured before a round.
type satMark struct{ walls, cpus, server, steps, cycles int }

func (s *satSide) mark() satMark {
	return satMark{len(s.walls), len(s.cpus), len(s.server), len(s.steps), len(s.cycles)}
}

// reset drops what the side measured since m.
func (s *satSide) reset(m satMark) {
	s.walls, s.cpus, s.server = s.walls[:m.walls], s.cpus[:m.cpus], s.server[:m.server]
	s.steps, s.cycles = s.steps[:m.steps], s.cycles[:m.cycles]
}

// runTiming is what one run's history says about its timing.
type runTiming struct {
	steps     []time.Duration // per activity: scheduled → completed
	cycles    []time.Duration // activity scheduled → next activity scheduled
	signaled  time.Time       // the first signal (zero: none)
	completed time.Time       // the run's completion (zero: not completed)
	// afterSignal counts the activities scheduled after the first signal.
	afterSignal int
	// wftWaits are the waits of the workflow tasks after the first signal,
	// scheduled → started; wftTimeouts counts those that timed out
	// (waiting on a worker's sticky queue past the worker's
	// StickyScheduleToStartTimeout, then scheduled on the task queue).
	wftWaits    []time.Duration
	wftTimeouts int
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
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
		scheduled[e.GetEventId()] = at
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
		if s, ok := scheduled[e.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()]; ok && !t.signaled.IsZero() {
			t.wftWaits = append(t.wftWaits, at.Sub(s))
		}
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
		if !t.signaled.IsZero() {
			t.wftTimeouts++
		}
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
