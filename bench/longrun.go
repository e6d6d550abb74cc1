package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// longParams sizes the long run section.
type longParams struct {
	// Turns is how many model turns the long run has (1,000 in a full run):
	// all but the last call the read tool, which returns ToolOutput bytes.
	Turns      int
	ToolOutput int
}

// longRun runs one AgentRun run of p.Turns turns whose tool outputs are
// p.ToolOutput bytes on the bench's dev server, and measures, from its
// history across every continue-as-new: history bytes per turn at turns
// 10, 100 and 1,000 (the bytes of the events from a turn's model step to
// the next), the largest CallModel input, the content store's bytes
// against the content's, and the wall time per turn (the gap between two
// model steps being scheduled) near the end against near turn 10.
func longRun(ctx context.Context, env *benchEnv, p longParams) ([]row, error) {
	sec := fmt.Sprintf("Long run: %d turns with %d-byte tool outputs (continue-as-new when Temporal suggests it)", p.Turns, p.ToolOutput)
	var script llm.Script
	for i := 1; i < p.Turns; i++ {
		script.Turns = append(script.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "read_notes", Args: json.RawMessage(fmt.Sprintf(`{"line":%d}`, i))}}})
	}
	script.Turns = append(script.Turns, llm.Turn{Text: "Read it all; the last line said " + llm.LastToolResult})

	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	store, err := content.NewFileStore(env.subdir("long-content"))
	if err != nil {
		return nil, err
	}
	counted := &content.Counting{Store: store}
	queue := "bench-long-" + runStamp()
	stop, err := startAgentWorker(c, queue, script, env.subdir("long"), counted, env.logger, agentOptions{}, readNotes{size: p.ToolOutput})
	if err != nil {
		return nil, err
	}
	defer stop()

	id := queue
	in := workflows.Input{Messages: agent.UserMessages("Read all the support notes."), MaxTurns: p.Turns}
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
	if err != nil {
		return nil, err
	}
	var res workflows.Result
	if err := r.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("long run %s: %w", id, err)
	}
	if res.Steps != 2*p.Turns-1 {
		return nil, fmt.Errorf("long run %s: %d steps, want %d", id, res.Steps, 2*p.Turns-1)
	}
	h, err := longHistory(ctx, c, id, p.Turns)
	if err != nil {
		return nil, err
	}
	// The content: the tool outputs, the run's input and the model's
	// messages as the conversation holds them.
	contentBytes := (p.Turns - 1) * p.ToolOutput
	// The last turn holds the answer and the run's end: compare tool turns.
	at := func(n int) int { return min(n, p.Turns-1) }
	perTurn := func(n int) float64 { return float64(h.bytes[at(n)-1]) }
	window := func(from, to int) float64 { // median wall ms per turn over turns from..to
		var ds []time.Duration
		for n := max(from, 2); n <= min(to, p.Turns); n++ {
			ds = append(ds, h.scheduled[n-1].Sub(h.scheduled[n-2]))
		}
		return ms(median(ds))
	}
	end := p.Turns - 1               // the last turn's gap to the next is the run's end
	win := min(50, max(end-10, 1)/2) // turns per window: medians of 50 turns are steady on a busy machine
	rows := []row{
		{Section: sec, Figure: fmt.Sprintf("history bytes of turn 10 vs 10 KiB (%d executions, %d events in all)", h.executions, h.events), Measured: perTurn(10), Baseline: 10 << 10, Unit: "B", Goal: 1.0},
		{Section: sec, Figure: fmt.Sprintf("history bytes of turn %d vs turn 10", at(100)), Measured: perTurn(100), Baseline: perTurn(10), Unit: "B", Goal: 1.2, GoalNote: "flat"},
		{Section: sec, Figure: fmt.Sprintf("history bytes of turn %d vs turn 10", at(1000)), Measured: perTurn(1000), Baseline: perTurn(10), Unit: "B", Goal: 1.2, GoalNote: "flat"},
		{Section: sec, Figure: "history bytes per turn over the whole run vs 10 KiB", Measured: float64(h.total) / float64(p.Turns), Baseline: 10 << 10, Unit: "B", Goal: 1.0},
		{Section: sec, Figure: "largest CallModel input vs 2 KiB", Measured: float64(h.maxInput), Baseline: 2 << 10, Unit: "B", Goal: 1.0},
		{Section: sec, Figure: fmt.Sprintf("content store bytes written vs tool output bytes (%d puts)", counted.Stats().Puts), Measured: float64(counted.Stats().BytesPut), Baseline: float64(contentBytes), Unit: "B", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("wall ms per turn, median of turns %d–%d vs turns 10–%d", end-win+1, end, 10+win-1), Measured: window(end-win+1, end), Baseline: window(10, 10+win-1), Unit: "ms", Goal: 1.2, GoalNote: "flat"},
	}
	// Where a turn's time goes, near the end against near the start.
	phase := func(ph string, from, to int) float64 {
		var ds []time.Duration
		for n := from; n <= min(to, p.Turns); n++ {
			ds = append(ds, h.phases[ph][n-1])
		}
		return ms(median(ds))
	}
	for _, ph := range longPhases {
		rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("ms per turn in %s, turns %d–%d vs 10–%d", ph, end-win+1, end, 10+win-1), Measured: phase(ph, end-win+1, end), Baseline: phase(ph, 10, 10+win-1), Unit: "ms"})
	}
	return rows, nil
}

// longHistory is what longRun reads from a run's histories.
type longHistoryStats struct {
	executions, events int
	total              int         // history bytes of every execution
	bytes              []int       // bytes by turn: from llm/N scheduled to llm/N+1 scheduled
	scheduled          []time.Time // when llm/N was scheduled, by N-1
	maxInput           int         // the largest CallModel input's payload bytes
	// phases holds, by phase name, each turn's time in that phase.
	phases map[string][]time.Duration
}

// The phases of a turn longHistory times.
const (
	longModel  = "CallModel started → completed"
	longTool   = "CallTool started → completed"
	longWFT    = "workflow tasks started → completed"
	longQueued = "activities scheduled → started, workflow tasks scheduled → started"
)

var longPhases = []string{longModel, longTool, longWFT, longQueued}

// longHistory reads every execution of run id, oldest first, attributing
// each event's bytes to the turn whose model step came before it.
func longHistory(ctx context.Context, c client.Client, id string, turns int) (longHistoryStats, error) {
	var runs [][]*historypb.HistoryEvent
	for runID := ""; ; {
		var events []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return longHistoryStats{}, err
			}
			events = append(events, e)
		}
		runs = append(runs, events)
		runID = events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	slices.Reverse(runs)
	s := longHistoryStats{executions: len(runs), bytes: make([]int, turns), scheduled: make([]time.Time, turns), phases: map[string][]time.Duration{}}
	for _, ph := range longPhases {
		s.phases[ph] = make([]time.Duration, turns)
	}
	turn := 0 // 1-based; 0 before llm/1
	for _, events := range runs {
		at := map[int64]time.Time{} // scheduled and started events by id
		kind := map[int64]string{}  // activity type by scheduled event id
		for _, e := range events {
			t := e.GetEventTime().AsTime()
			at[e.GetEventId()] = t
			spend := func(ph string, from int64) {
				if turn > 0 && !at[from].IsZero() {
					s.phases[ph][turn-1] += t.Sub(at[from])
				}
			}
			switch {
			case e.GetActivityTaskScheduledEventAttributes() != nil:
				kind[e.GetEventId()] = activities.Method(e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
			case e.GetActivityTaskStartedEventAttributes() != nil:
				spend(longQueued, e.GetActivityTaskStartedEventAttributes().GetScheduledEventId())
			case e.GetActivityTaskCompletedEventAttributes() != nil:
				a := e.GetActivityTaskCompletedEventAttributes()
				if kind[a.GetScheduledEventId()] == "CallModel" {
					spend(longModel, a.GetStartedEventId())
				} else {
					spend(longTool, a.GetStartedEventId())
				}
			case e.GetWorkflowTaskStartedEventAttributes() != nil:
				spend(longQueued, e.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId())
			case e.GetWorkflowTaskCompletedEventAttributes() != nil:
				spend(longWFT, e.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId())
			}
			n := proto.Size(e)
			s.events++
			s.total += n
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
				if k, _ := agent.StepTurn(a.GetActivityId()); k > 0 && k <= turns {
					turn = k
					s.scheduled[k-1] = e.GetEventTime().AsTime()
				}
				size := 0
				for _, p := range a.GetInput().GetPayloads() {
					size += len(p.GetData())
				}
				s.maxInput = max(s.maxInput, size)
			}
			if turn > 0 {
				s.bytes[turn-1] += n
			}
		}
	}
	return s, nil
}
