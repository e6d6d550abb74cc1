package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// forkParams sizes the fork section.
type forkParams struct {
	// Turns is T, the origin's model calls: T-1 lookup turns, then the
	// answer.
	Turns int
	// Near and Far are the turns the forks go on live from (llm/Near,
	// llm/Far).
	Near, Far int
	// Rounds is how many measured forks of each point alternate, after
	// one warm-up fork of each.
	Rounds int
}

// forkGoal is the goal for the time to a fork's first live step at Far
// against at Near: continue-as-new and content by reference keep the
// origin's record that a fork reads about as small at turn 900 as at turn
// 10 (issue 47).
const forkGoal = 1.2

// forkTimeout bounds the origin's run (1,000 turns take about half a
// minute on a tuned dev server) and each fork.
const forkTimeout = 10 * time.Minute

// firstCall is a model that stamps the first call it answers after each
// arm: the fork's first live step.
type firstCall struct {
	llm.Provider
	mu    sync.Mutex
	first time.Time // zero until the first call after arm
	calls atomic.Int32
}

func (m *firstCall) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.calls.Add(1)
	m.mu.Lock()
	if m.first.IsZero() {
		m.first = time.Now()
	}
	m.mu.Unlock()
	return m.Provider.Complete(ctx, req)
}

// arm forgets the last stamp and the count of calls.
func (m *firstCall) arm() {
	m.mu.Lock()
	m.first = time.Time{}
	m.mu.Unlock()
	m.calls.Store(0)
}

func (m *firstCall) stamp() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

type forkLookupIn struct {
	Resource string `json:"resource"`
}

// forkTimes runs one origin of p.Turns turns of a Go read tool on an
// in-process worker (agentrun.Register, two agents with scripted models),
// then forks it at llm/Near and llm/Far onto the second agent, alternating,
// and measures each fork from the Fork call to its agent's first model
// call. Forks run one at a time, each to its end.
func forkTimes(ctx context.Context, env *benchEnv, p forkParams) ([]row, error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, forkTimeout)
	defer cancel()
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		return nil, err
	}
	lookup, err := agentrun.NewTool(agentrun.ToolOptions{Name: "lookup", Description: "Look a resource's policy up."},
		func(_ context.Context, in forkLookupIn) (string, error) {
			return "policy of " + in.Resource + ": request access with a ticket", nil
		})
	if err != nil {
		return nil, err
	}
	long := make([]llm.Turn, 0, p.Turns)
	for i := 1; i < p.Turns; i++ {
		long = append(long, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"resource":"db-%d"}`, i))}}})
	}
	long = append(long, llm.Turn{Text: "done after " + llm.LastToolResult})
	// The fork's model answers at once; the scripted model picks its turn
	// by the assistant messages before it, so a fork at llm/N answers N's.
	alt := make([]llm.Turn, p.Turns)
	for i := range alt {
		alt[i] = llm.Turn{Text: forkAnswer(i + 1)}
	}
	forkModel := &firstCall{Provider: llm.NewScripted(llm.Script{Turns: alt})}
	queue := "bench-fork-" + runStamp()
	w := worker.New(c, queue, worker.Options{})
	err = agentrun.Register(w, agentrun.Config{Journal: env.subdir("fork"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: []agentrun.Agent{
		{Name: "long", Model: llm.NewScripted(llm.Script{Turns: long}), Tools: []tools.Tool{lookup}},
		{Name: "alt", Model: forkModel, Tools: []tools.Tool{lookup}},
	}})
	if err != nil {
		return nil, err
	}
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()
	ac, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: queue})
	if err != nil {
		return nil, err
	}

	originID := queue + "-origin"
	origin, err := ac.Start(ctx, agentrun.StartOptions{ID: originID, Agent: "long", Prompt: "look everything up", MaxTurns: p.Turns + 10})
	if err != nil {
		return nil, err
	}
	if res, err := origin.Wait(ctx); err != nil || res.Status != agentrun.StatusCompleted {
		return nil, fmt.Errorf("origin %s: %+v, %v", originID, res, err)
	}
	originTook := time.Since(began)
	execs, err := executions(ctx, c, originID)
	if err != nil {
		return nil, err
	}

	times := map[int][]time.Duration{}
	for round := 0; round <= p.Rounds; round++ {
		order := []int{p.Near, p.Far}
		if round%2 == 1 {
			order = []int{p.Far, p.Near}
		}
		for _, at := range order {
			id := fmt.Sprintf("%s-fork-%d-%d", queue, at, round)
			forkModel.arm()
			start := time.Now()
			f, err := ac.Fork(ctx, originID, agentrun.ForkOptions{From: fmt.Sprintf("llm/%d", at), Agent: "alt", ID: id})
			if err != nil {
				return nil, err
			}
			res, err := f.Wait(ctx)
			if err != nil || res.Answer != forkAnswer(at) {
				return nil, fmt.Errorf("fork %s: %+v, %v; want the answer %q", id, res, err, forkAnswer(at))
			}
			if n := forkModel.calls.Load(); n != 1 {
				return nil, fmt.Errorf("fork %s: %d model calls on its agent, want 1", id, n)
			}
			if round > 0 {
				times[at] = append(times[at], forkModel.stamp().Sub(start))
			}
		}
	}

	sec := fmt.Sprintf("Fork: an origin of %d model calls (%d lookup turns and the answer; it took %s), forked onto another agent (a scripted model that answers at once) at llm/%d and llm/%d, "+
		"one fork at a time, %d alternating rounds each after a warm-up fork of each; Client.Fork → the fork agent's first model call, one in-process worker (agentrun.Register)",
		p.Turns, p.Turns-1, originTook.Round(time.Second), p.Near, p.Far, p.Rounds)
	far, near := times[p.Far], times[p.Near]
	return []row{
		{Section: sec, Figure: fmt.Sprintf("ms from Client.Fork to the first live step, fork at turn %d vs at turn %d (median of rounds)", p.Far, p.Near),
			Measured: ms(median(far)), Baseline: ms(median(near)), Unit: "ms", Goal: forkGoal, GoalNote: "as cheap at the end of a long run as near its start"},
		{Section: sec, Figure: fmt.Sprintf("ms from Client.Fork to the first live step, fork at turn %d vs at turn %d (mean of rounds)", p.Far, p.Near),
			Measured: ms(mean(far)), Baseline: ms(mean(near)), Unit: "ms"},
		{Section: sec, Figure: "executions of the origin (each continue-as-new starts one) vs one",
			Measured: float64(execs), Baseline: 1},
	}, nil
}

// forkAnswer is the fork agent's answer at turn n.
func forkAnswer(n int) string { return fmt.Sprintf("the fork's answer at turn %d", n) }

// executions counts the executions of run id: the latest, and each one it
// continued, by the first event of each history.
func executions(ctx context.Context, c client.Client, id string) (int, error) {
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return 0, err
	}
	run, n := d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId(), 0
	for run != "" {
		n++
		it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			return 0, fmt.Errorf("history of %s run %s: empty", id, run)
		}
		e, err := it.Next()
		if err != nil {
			return 0, fmt.Errorf("history of %s run %s: %w", id, run, err)
		}
		run = e.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
	}
	return n, nil
}
