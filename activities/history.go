package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/agent"
)

// Reading a run's steps back from its Temporal history, for a fork (the
// worker reads its origin) and for a fork's drift report (a client reads
// both runs). Only what the run's own workflow and activities recorded is
// read: the model steps' inputs (as the workflow scheduled them) and the
// activities' results.

// Recorded is what a run's history says about its steps from a given turn
// on.
type Recorded struct {
	// WorkflowID names the run; Type is its workflow type; Status is its
	// latest execution's status.
	WorkflowID string
	Type       string
	Status     enumspb.WorkflowExecutionStatus
	// Agent is the agent the run named at its start ("" for the worker's
	// default); Child is set on a child run an agent tool started.
	Agent string
	Child bool
	// Fork is set when the run is itself a fork.
	Fork *agent.Fork
	// First is the first model call whose step the history holds: a run
	// that continued as new holds earlier ones in executions not read, a
	// fork none before its fork point.
	First int
	// Inputs holds the model steps' inputs, Results the steps' results
	// (model replies, tool results as CallTool returned them), Calls the
	// tool calls CallTool ran, by step.
	Inputs  map[string]agent.ModelInput
	Results map[string]json.RawMessage
	Calls   map[string]agent.ToolCall
	// Writes are the run's write steps, in step order: with the start of
	// their result, or Unknown when none completed (it failed, timed out,
	// or a person settled it).
	Writes []agent.Write
	// Catalog is the run's tool catalog, when an execution read has it.
	Catalog *Catalog
}

// startInput is the part of a run's start input (workflows.Input) the
// reader needs.
type startInput struct {
	Agent     string      `json:"agent"`
	Fork      *agent.Fork `json:"fork"`
	Continued *struct {
		Checkpoint agent.Checkpoint `json:"checkpoint"`
		Facts      *agent.Facts     `json:"facts"`
		Catalog    Catalog          `json:"catalog"`
	} `json:"continued"`
}

// WorkflowType is the workflow type of an agent run (workflows.WorkflowName).
const WorkflowType = "AgentRun"

// ReadRecorded reads the history of the run workflowID from its newest
// execution back to the one where model call from begins (from >= 1; 1
// reads them all), with dc, the data converter of the worker's client.
func ReadRecorded(ctx context.Context, c client.Client, dc converter.DataConverter, workflowID string, from int) (*Recorded, error) {
	d, err := c.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", workflowID, err)
	}
	info := d.RawResponse.GetWorkflowExecutionInfo()
	rec := &Recorded{WorkflowID: workflowID, Type: info.GetType().GetName(), Status: info.GetStatus(), First: 1,
		Inputs: map[string]agent.ModelInput{}, Results: map[string]json.RawMessage{}, Calls: map[string]agent.ToolCall{}}
	if rec.Type != WorkflowType {
		return rec, nil // no agent run: its history holds none of its steps
	}
	kinds := map[string]agent.Kind{}     // tool step → kind, from CallTool's input
	done := map[string]json.RawMessage{} // tool step → result
	scheduled := map[string]bool{}       // tool steps scheduled
	runID := info.GetExecution().GetRunId()
	for runID != "" {
		r := executionReader{dc: dc, rec: rec, kinds: kinds, done: done, scheduled: scheduled, ids: map[int64]string{}, types: map[int64]string{}}
		prev, start, err := r.read(ctx, c, workflowID, runID)
		if err != nil {
			return nil, err
		}
		rec.First = start + 1
		if start < from || prev == "" {
			break
		}
		runID = prev
	}
	for step := range scheduled {
		kind := kinds[step]
		if kind == "" && rec.Catalog != nil { // an activity tool: its kind from the catalog
			_, name := toolName(step)
			for _, t := range rec.Catalog.Tools {
				if t.Name == name {
					kind = t.Kind
				}
			}
		}
		if kind != agent.KindWrite {
			continue
		}
		w := agent.Write{Step: step}
		if res, ok := done[step]; ok {
			w.Result = resultPreview(res)
		} else {
			w.Unknown = true
		}
		rec.Writes = append(rec.Writes, w)
	}
	rec.Writes = agent.WritesAfter("llm/1", rec.Writes)
	return rec, nil
}

// toolName returns the turn and tool name of "tool/N/I/NAME".
func toolName(step string) (int, string) {
	n, _ := agent.StepTurn(step)
	parts := strings.SplitN(step, "/", 4)
	if len(parts) < 4 {
		return n, ""
	}
	return n, parts[3]
}

// resultPreview is the start of a tool result on one line.
func resultPreview(raw json.RawMessage) string {
	if r, err := agent.DecodeToolResult(raw); err == nil && (r.Content != "" || r.ContentRef != nil) {
		if r.ContentRef != nil {
			return agent.Clip(r.ContentRef.Preview, 80)
		}
		return agent.Clip(r.Content, 80)
	}
	return agent.Clip(string(raw), 80)
}

// executionReader reads one execution's history into rec.
type executionReader struct {
	dc        converter.DataConverter
	rec       *Recorded
	kinds     map[string]agent.Kind
	done      map[string]json.RawMessage
	scheduled map[string]bool
	ids       map[int64]string // scheduled event id → step
	types     map[int64]string // scheduled event id → activity method
}

// read reads the execution runID; it returns the run id of the execution
// it continues ("" for none) and the model calls made before it.
func (r *executionReader) read(ctx context.Context, c client.Client, workflowID, runID string) (prev string, start int, err error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", 0, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if prev, start, err = r.event(e, prev, start); err != nil {
			return "", 0, fmt.Errorf("history of %s, event %d: %w", workflowID, e.GetEventId(), err)
		}
	}
	return prev, start, nil
}

func (r *executionReader) event(e *historypb.HistoryEvent, prev string, start int) (string, int, error) {
	switch {
	case e.GetWorkflowExecutionStartedEventAttributes() != nil:
		a := e.GetWorkflowExecutionStartedEventAttributes()
		var in startInput
		if err := r.decode(a.GetInput(), &in); err != nil {
			return "", 0, fmt.Errorf("the run's input: %w", err)
		}
		r.rec.Agent, r.rec.Fork = in.Agent, in.Fork
		r.rec.Child = a.GetParentWorkflowExecution() != nil && in.Agent != "" && agent.IsChildRunID(a.GetParentWorkflowExecution().GetWorkflowId(), r.rec.WorkflowID)
		if in.Fork != nil && in.Continued == nil {
			// A fork's first execution: its history holds no step before
			// its fork point.
			n, _ := agent.StepTurn(in.Fork.From)
			start = max(n-1, 0)
		}
		if c := in.Continued; c != nil {
			start = c.Checkpoint.Turn
			cat := c.Catalog
			r.rec.Catalog = &cat
			for step, res := range c.Facts.Complete().Results {
				if _, ok := r.rec.Results[step]; !ok {
					r.rec.Results[step] = res
				}
			}
		}
		return a.GetContinuedExecutionRunId(), start, nil
	case e.GetActivityTaskScheduledEventAttributes() != nil:
		a := e.GetActivityTaskScheduledEventAttributes()
		step, _, _ := strings.Cut(a.GetActivityId(), "#")
		method := Method(a.GetActivityType().GetName())
		r.ids[e.GetEventId()], r.types[e.GetEventId()] = step, method
		switch {
		case method == "CallModel":
			var in StepInput
			if err := r.decode(a.GetInput(), &in); err != nil {
				return "", 0, fmt.Errorf("the input of %s: %w", step, err)
			}
			if in.Step.Model != nil {
				r.rec.Inputs[step] = *in.Step.Model
			}
		case agent.IsToolStep(step):
			r.scheduled[step] = true
			if method == "CallTool" {
				var in StepInput
				if err := r.decode(a.GetInput(), &in); err != nil {
					return "", 0, fmt.Errorf("the input of %s: %w", step, err)
				}
				r.kinds[step] = in.Step.Kind
				if in.Step.Call != nil {
					r.rec.Calls[step] = *in.Step.Call
				}
			}
		}
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		a := e.GetActivityTaskCompletedEventAttributes()
		step, method := r.ids[a.GetScheduledEventId()], r.types[a.GetScheduledEventId()]
		if step == "" {
			return prev, start, nil
		}
		if method == "ListTools" || method == "ListAgentTools" || method == "ListAgentToolsAtStart" {
			var cat Catalog
			if err := r.decode(a.GetResult(), &cat); err != nil {
				return "", 0, fmt.Errorf("the tool list: %w", err)
			}
			r.rec.Catalog = &cat
			return prev, start, nil
		}
		var res json.RawMessage
		if err := r.decode(a.GetResult(), &res); err != nil {
			return "", 0, fmt.Errorf("the result of %s: %w", step, err)
		}
		if method == "CallModel" || method == "CallTool" {
			r.rec.Results[step] = res
		}
		if agent.IsToolStep(step) {
			r.done[step] = res
		}
	}
	return prev, start, nil
}

func (r *executionReader) decode(p *commonpb.Payloads, v any) error {
	if p == nil || len(p.GetPayloads()) == 0 {
		return fmt.Errorf("no payload")
	}
	return r.dc.FromPayloads(p, v)
}
