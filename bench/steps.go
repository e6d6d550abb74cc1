package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// stepParams sizes the step overhead section.
type stepParams struct {
	// Turns is T, the script's tool-calling turns: each calls lookup once;
	// a final text turn follows.
	Turns int
	// Rounds is how many measured runs of each kind alternate, after one
	// warm-up run of each.
	Rounds int
}

// activityCount is the number of activities of an AgentRun run of a
// script with turns tool-calling turns: ListTools, a CallModel and a
// CallTool per turn, and the final CallModel.
func activityCount(turns int) int { return 1 + 2*turns + 1 }

// agentScript is T turns that each call lookup once, then an answer.
func agentScript(turns int) llm.Script {
	s := llm.Script{}
	for range turns {
		s.Turns = append(s.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"vpn"}`)}}})
	}
	s.Turns = append(s.Turns, llm.Turn{Text: "Done: " + llm.LastToolResult})
	return s
}

// The baseline: a tiny workflow running no-op activities one after another.
const (
	bareWorkflowName = "BareChain"
	bareActivityName = "Noop"
)

// bareChain runs n no-op activities one after another. They have AgentRun's
// start-to-close timeout: the server keeps a timer per activity that fires
// that long after it started, also once the run has completed, and with a
// minute the 1,600 timers of this section fired during the long run that
// follows it, slowing the dev server there by a quarter.
func bareChain(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: workflows.StepTimeout})
	for range n {
		if err := workflow.ExecuteActivity(ctx, bareActivityName).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func noop(context.Context) error { return nil }

// The bytes baseline: a bare chain whose activities carry as many bytes as
// AgentRun's do (input, result and summary) under AgentRun's activity
// options, so that the time a step's payloads and options cost the SDK and
// the server stands apart from AgentRun's code.
const (
	sizedWorkflowName = "BareChainSized"
	sizedActivityName = "Carry"
)

// carrySizes are the bytes one activity of the sized chain carries.
type carrySizes struct {
	Activities int
	Input      int // bytes of the activity's input payload data
	Result     int // bytes of its result payload data
	Summary    int // bytes of its summary
	// Heartbeat sets AgentRun's heartbeat timeout (workflows.HeartbeatTimeout).
	Heartbeat bool
}

// carryInput is the sized chain's activity input: padding that makes it
// Input bytes, and the result's size.
type carryInput struct {
	Pad    string `json:"p"`
	Result int    `json:"r"`
}

func sizedChain(ctx workflow.Context, sz carrySizes) error {
	// AgentRun's retry policy (a limit of attempts, workflows.stepOptions),
	// and its heartbeat timeout when asked.
	opts := workflow.ActivityOptions{StartToCloseTimeout: workflows.StepTimeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
		Summary:     strings.Repeat("s", sz.Summary)}
	if sz.Heartbeat {
		opts.HeartbeatTimeout = workflows.HeartbeatTimeout
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	// {"p":"","r":N} is 14 bytes and the digits; a result "..." is 2 and the text.
	in := carryInput{Pad: strings.Repeat("i", max(sz.Input-14-len(strconv.Itoa(sz.Result)), 0)), Result: max(sz.Result-2, 0)}
	for range sz.Activities {
		if err := workflow.ExecuteActivity(ctx, sizedActivityName, in).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func carry(_ context.Context, in carryInput) (string, error) {
	return strings.Repeat("r", in.Result), nil
}

func newBareWorker(c client.Client, queue string) worker.Worker {
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(bareChain, workflow.RegisterOptions{Name: bareWorkflowName})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: bareActivityName})
	w.RegisterWorkflowWithOptions(sizedChain, workflow.RegisterOptions{Name: sizedWorkflowName})
	w.RegisterActivityWithOptions(carry, activity.RegisterOptions{Name: sizedActivityName})
	return w
}

// contender is one side of the comparison: a worker on its own queue and
// client (whose RPCs are counted), and how to run one workflow on it.
type contender struct {
	name  string
	queue string
	rpcs  *rpcCounter
	run   func(ctx context.Context, c client.Client, id string) error
	// driver starts and waits for its runs; nil: the section's.
	driver client.Client
	// per activity, one sample per measured run
	times []time.Duration
	ids   []string
	calls map[string]int64 // RPCs during the measured runs
}

// The step overhead section's figures of the pair with gRPC compression
// off, which the cluster section repeats.
const (
	figOffPair      = "ms per activity, gRPC compression off on both sides (client.GrpcCompressionNone on the driver's and the workers' clients), AgentRun vs bare chain"
	figAgentRunGzip = "ms per activity, AgentRun, gzip (the sdk's default) vs compression off"
	figBareGzip     = "ms per activity, the bare chain, gzip vs compression off"
)

// stepResult is what the step overhead section found.
type stepResult struct {
	rows     []row
	findings []string
}

func stepOverhead(ctx context.Context, env *benchEnv, p stepParams) (stepResult, error) {
	n := activityCount(p.Turns)
	stamp := runStamp()
	driver, err := env.dial(nil)
	if err != nil {
		return stepResult{}, err
	}
	defer driver.Close()

	bare := &contender{name: "bare", queue: "bench-bare-" + stamp, rpcs: newRPCCounter()}
	bare.run = bareRun(bare.queue, n)
	// The sized chains run on the bare worker's queue once the warm-up
	// told them AgentRun's bytes: sized without a heartbeat timeout,
	// beating with one.
	var sz carrySizes
	sizedRun := func(heartbeat bool) func(ctx context.Context, c client.Client, id string) error {
		return func(ctx context.Context, c client.Client, id string) error {
			in := sz
			in.Heartbeat = heartbeat
			r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: bare.queue}, sizedWorkflowName, in)
			if err != nil {
				return err
			}
			return r.Get(ctx, nil)
		}
	}
	sized := &contender{name: "sized", queue: bare.queue, rpcs: bare.rpcs, run: sizedRun(false)}
	beating := &contender{name: "beating", queue: bare.queue, rpcs: bare.rpcs, run: sizedRun(true)}
	agentRun := &contender{name: "agentrun", queue: "bench-agentrun-" + stamp, rpcs: newRPCCounter()}
	agentRun.run = agentRunRun(agentRun.queue, p.Turns, n)
	stop, err := startStepWorkers(env, p, bare, agentRun, nil)
	if err != nil {
		return stepResult{}, err
	}
	defer stop()

	// The same pair with gRPC compression off on every client of theirs,
	// the driver's and the workers' (the sdk's default is gzip).
	noGzip := func(o *client.Options) { o.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{} }
	offDriver, err := env.dialWith(nil, noGzip)
	if err != nil {
		return stepResult{}, err
	}
	defer offDriver.Close()
	bareOff := &contender{name: "bare-nogzip", queue: "bench-bare-nogzip-" + stamp, rpcs: newRPCCounter(), driver: offDriver}
	bareOff.run = bareRun(bareOff.queue, n)
	agentRunOff := &contender{name: "agentrun-nogzip", queue: "bench-agentrun-nogzip-" + stamp, rpcs: newRPCCounter(), driver: offDriver}
	agentRunOff.run = agentRunRun(agentRunOff.queue, p.Turns, n)
	stopOff, err := startStepWorkers(env, p, bareOff, agentRunOff, noGzip)
	if err != nil {
		return stepResult{}, err
	}
	defer stopOff()

	// Alternate, so that both sides see the same server and machine state;
	// round 0 of each is the warm-up and is not counted. The sized chain
	// joins from round 1, carrying the bytes of AgentRun's warm-up run; its
	// RPCs are not counted (it shares the bare worker).
	for round := 0; round <= p.Rounds; round++ {
		if round == 1 {
			if sz, err = carried(ctx, driver, fmt.Sprintf("%s-%s-0", agentRun.name, stamp), n); err != nil {
				return stepResult{}, err
			}
			for _, c := range []*contender{sized, beating} {
				if err := c.run(ctx, driver, fmt.Sprintf("%s-%s-0", c.name, stamp)); err != nil {
					return stepResult{}, fmt.Errorf("warm-up, %s: %w", c.name, err)
				}
			}
		}
		for _, c := range []*contender{bare, sized, beating, agentRun, bareOff, agentRunOff} {
			if (c == sized || c == beating) && round == 0 {
				continue
			}
			id := fmt.Sprintf("%s-%s-%d", c.name, stamp, round)
			before := c.rpcs.snapshot()
			start := time.Now()
			if err := c.run(ctx, cmp.Or(c.driver, driver), id); err != nil {
				return stepResult{}, fmt.Errorf("round %d, %s: %w", round, c.name, err)
			}
			elapsed := time.Since(start)
			if round == 0 {
				continue
			}
			c.times = append(c.times, elapsed/time.Duration(n))
			c.ids = append(c.ids, id)
			if c != sized && c != beating {
				c.calls = addCalls(c.calls, diffCalls(c.rpcs.snapshot(), before))
			}
		}
	}

	res := stepResult{}
	sec := fmt.Sprintf("Step overhead: AgentRun (T=%d lookup turns, %d activities) vs a bare chain of %d no-op activities, %d alternating rounds each", p.Turns, n, n, p.Rounds)
	res.rows = append(res.rows, row{
		Section: sec, Figure: "ms per activity, AgentRun vs bare chain (median of rounds)",
		Measured: ms(median(agentRun.times)), Baseline: ms(median(bare.times)), Unit: "ms", Goal: 1.05,
	})
	carries := fmt.Sprintf("%d B of input, %d B of result and %d B of summary per activity, AgentRun's mean", sz.Input, sz.Result, sz.Summary)
	res.rows = append(res.rows,
		row{Section: sec, Figure: "ms per activity, a bare chain carrying AgentRun's bytes (" + carries + ") and retry policy vs the bare chain: what the bytes cost",
			Measured: ms(median(sized.times)), Baseline: ms(median(bare.times)), Unit: "ms"},
		row{Section: sec, Figure: fmt.Sprintf("ms per activity, that chain with AgentRun's %s heartbeat timeout vs without: what the heartbeat timeout costs", workflows.HeartbeatTimeout),
			Measured: ms(median(beating.times)), Baseline: ms(median(sized.times)), Unit: "ms"},
		row{Section: sec, Figure: "ms per activity, AgentRun vs that chain (its bytes, retry policy and heartbeat timeout): what AgentRun's code costs (its workflow, its activities, the content store)",
			Measured: ms(median(agentRun.times)), Baseline: ms(median(beating.times)), Unit: "ms"},
		row{Section: sec, Figure: figOffPair, Measured: ms(median(agentRunOff.times)), Baseline: ms(median(bareOff.times)), Unit: "ms"},
		row{Section: sec, Figure: figAgentRunGzip, Measured: ms(median(agentRun.times)), Baseline: ms(median(agentRunOff.times)), Unit: "ms"},
		row{Section: sec, Figure: figBareGzip, Measured: ms(median(bare.times)), Baseline: ms(median(bareOff.times)), Unit: "ms"})

	// Where the time goes: the gaps between the events of every measured
	// run's history, AgentRun against the bare chain.
	aPhases, aBytes, err := historyPhases(ctx, driver, agentRun.ids)
	if err != nil {
		return stepResult{}, err
	}
	bPhases, bBytes, err := historyPhases(ctx, driver, bare.ids)
	if err != nil {
		return stepResult{}, err
	}
	type excess struct {
		phase string
		ms    float64
	}
	var excesses []excess
	var perRun []string
	for _, ph := range phaseNames {
		a, b := ms(median(aPhases[ph])), ms(median(bPhases[ph]))
		res.rows = append(res.rows, row{Section: sec, Figure: "median gap " + ph, Measured: a, Baseline: b, Unit: "ms"})
		switch ph {
		case phaseCycle:
			res.rows = append(res.rows, row{Section: sec, Figure: "mean gap " + ph, Measured: ms(mean(aPhases[ph])), Baseline: ms(mean(bPhases[ph])), Unit: "ms"})
		case phaseRunStart, phaseRunEnd: // once per run, not per activity
			perRun = append(perRun, fmt.Sprintf("%s %+.2f ms", ph, a-b))
		default:
			excesses = append(excesses, excess{ph, a - b})
		}
	}
	runs := float64(len(agentRun.ids))
	perAct := func(b int) float64 { return float64(b) / runs / float64(n) }
	res.rows = append(res.rows, row{Section: sec, Figure: "history bytes per activity",
		Measured: perAct(aBytes.total), Baseline: perAct(bBytes.total), Unit: "B", Goal: 1.5})
	aCalls, bCalls := perActivity(agentRun.calls, runs*float64(n)), perActivity(bare.calls, runs*float64(n))
	res.rows = append(res.rows, row{Section: sec, Figure: "worker RPCs per activity (polls included)",
		Measured: sumCalls(aCalls), Baseline: sumCalls(bCalls)})

	slices.SortFunc(excesses, func(x, y excess) int { return cmp.Compare(y.ms, x.ms) })
	var parts []string
	for _, e := range excesses {
		if e.ms >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s +%.2f ms", e.phase, e.ms))
		}
	}
	res.findings = append(res.findings, fmt.Sprintf(
		"AgentRun spends %.2f ms per activity against the bare chain's %.2f ms. By phase of a step, its excess over the bare chain (medians): %s. Once per run: %s.",
		ms(median(agentRun.times)), ms(median(bare.times)), orNone(strings.Join(parts, ", ")), strings.Join(perRun, ", ")))
	res.findings = append(res.findings, "Worker RPCs per activity, AgentRun vs bare chain: "+compareCalls(aCalls, bCalls)+".")
	var bytesBy []string
	for _, part := range byteParts {
		bytesBy = append(bytesBy, fmt.Sprintf("%s %.0f B vs %.0f B", part, perAct(aBytes.parts[part]), perAct(bBytes.parts[part])))
	}
	res.findings = append(res.findings, fmt.Sprintf("History bytes per activity, AgentRun vs bare chain, by part of the events (proto size): %s.", strings.Join(bytesBy, ", ")))
	res.findings = append(res.findings, fmt.Sprintf("AgentRun's activity inputs per activity by JSON field (the payloads' data; the rest of an input is its payload's metadata and framing): %s.", fieldsShown(aBytes.fields, runs*float64(n))))
	if hb := aCalls["RecordActivityTaskHeartbeat"] - bCalls["RecordActivityTaskHeartbeat"]; hb >= 0.5 {
		res.findings = append(res.findings, fmt.Sprintf(
			"AgentRun's activities send %.2f heartbeats per activity more than the bare chain's. The SDK sends an activity's first heartbeat "+
				"at once, as a synchronous RPC in the calling goroutine, and the server persists it; a heartbeat at the start of a step "+
				"therefore sits on every step's critical path (in \"%s\" above).", hb, phaseActRun))
	}
	return res, nil
}

// bareRun runs a bare chain of n no-op activities on queue.
func bareRun(queue string, n int) func(ctx context.Context, c client.Client, id string) error {
	return func(ctx context.Context, c client.Client, id string) error {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, bareWorkflowName, n)
		if err != nil {
			return err
		}
		return r.Get(ctx, nil)
	}
}

// agentRunRun runs an AgentRun run of turns lookup turns (n activities)
// on queue and checks its answer.
func agentRunRun(queue string, turns, n int) func(ctx context.Context, c client.Client, id string) error {
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: "Which of my policies changed?"}}, MaxTurns: turns + 1}
	return func(ctx context.Context, c client.Client, id string) error {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, input)
		if err != nil {
			return err
		}
		var res workflows.Result
		if err := r.Get(ctx, &res); err != nil {
			return err
		}
		if res.Steps != n-1 || !strings.HasPrefix(res.Answer, "Done: ") {
			return fmt.Errorf("agentrun %s: %d steps, answer %q; want %d steps and the script's answer", id, res.Steps, res.Answer, n-1)
		}
		return nil
	}
}

// startStepWorkers starts bare's and agentRun's workers, each on a client
// of its own whose RPCs its contender counts and whose options set changes
// (nil: none), and returns what stops them.
func startStepWorkers(env *benchEnv, p stepParams, bare, agentRun *contender, set func(*client.Options)) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	bareClient, err := env.dialWith(bare.rpcs, set)
	if err != nil {
		return nil, err
	}
	stops = append(stops, bareClient.Close)
	bw := newBareWorker(bareClient, bare.queue)
	if err := bw.Start(); err != nil {
		return nil, fmt.Errorf("%s worker: %w", bare.name, err)
	}
	stops = append(stops, bw.Stop)
	agentClient, err := env.dialWith(agentRun.rpcs, set)
	if err != nil {
		return nil, err
	}
	stops = append(stops, agentClient.Close)
	aw, closeTools, err := newAgentWorker(agentClient, agentRun.queue, agentScript(p.Turns), env.subdir(agentRun.name), nil, env.logger, agentOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s worker: %w", agentRun.name, err)
	}
	stops = append(stops, func() { _ = closeTools() })
	if err := aw.Start(); err != nil {
		return nil, fmt.Errorf("%s worker: %w", agentRun.name, err)
	}
	stops = append(stops, aw.Stop)
	return stop, nil
}

// carried returns the mean bytes an activity of the AgentRun run id (of n
// activities) carries in its input, result and summary.
func carried(ctx context.Context, c client.Client, id string, n int) (carrySizes, error) {
	sz := carrySizes{Activities: n}
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return sz, fmt.Errorf("history of %s: %w", id, err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			for _, p := range a.GetInput().GetPayloads() {
				sz.Input += len(p.GetData())
			}
			sz.Summary += len(e.GetUserMetadata().GetSummary().GetData())
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			for _, p := range a.GetResult().GetPayloads() {
				sz.Result += len(p.GetData())
			}
		}
	}
	sz.Input, sz.Result, sz.Summary = sz.Input/n, sz.Result/n, sz.Summary/n
	return sz, nil
}
