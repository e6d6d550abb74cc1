package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/workflows"
)

// showFromHistory prints what the server holds of a run when no worker
// answers its state query: the status from the run's description (its
// AgentRunStatus, else the workflow's), the answer or failure of a closed
// run (the server has its result), the pending markers from AgentRunStep
// and the steps from the activity events of the run's current execution.
// One line says the live state needs a running worker and why the query
// failed.
func (r *Remote) showFromHistory(ctx context.Context, w io.Writer, runID string, desc description, qerr error) error {
	raw, err := describeRaw(ctx, r.Conn, runID)
	if err != nil {
		return fmt.Errorf("describe run %s: %w", runID, err)
	}
	sa := raw.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	var status, step string
	if p := sa[workflows.StatusKey.GetName()]; p != nil {
		_ = json.Unmarshal(p.GetData(), &status)
	}
	if p := sa[workflows.StepKey.GetName()]; p != nil {
		_ = json.Unmarshal(p.GetData(), &step)
	}
	o := agent.Outcome{Status: agent.Status(status)}
	if ended, closed := endedStatus(desc.status); closed {
		o.Status = agent.Status(ended)
		var res workflows.Result
		err := r.Conn.GetWorkflow(ctx, runID, desc.runID).Get(ctx, &res)
		var canceled *temporal.CanceledError
		switch {
		case err == nil:
			o.Answer, o.CutOff, o.Empty = res.Answer, res.CutOff, res.Empty
		case errors.As(err, &canceled):
			o.Reason = agent.CancelledReason("")
		default:
			o.Reason = failureMessage(err)
		}
	}
	fmt.Fprintf(w, "run %s: %s (workflow %s; from the server's history: the live state needs a running worker on task queue %s, and none answered: %v)\n",
		runID, cmpStatus(o.Status), workflowStatus(desc.status), r.Settings.TaskQueue, oneLine(qerr))
	switch o.Status {
	case agent.StatusAwaitingApproval:
		if step != "" {
			fmt.Fprintf(w, "  pending: %s (see their arguments with %s once a worker runs)\n", step, r.op().reconcile("show", runID))
		}
	case agent.StatusIndeterminate:
		if step != "" {
			fmt.Fprintf(w, "  indeterminate: %s\n", step)
		}
	}
	for _, kv := range [][2]string{{"reason", o.Reason}, {"answer", o.Answer}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
		}
	}
	steps, err := r.historySteps(ctx, runID)
	if err != nil {
		return err
	}
	if len(steps) > 0 {
		fmt.Fprintln(w, "  steps of the current execution:")
	}
	for _, s := range steps {
		fmt.Fprintf(w, "  %-28s %-5s %s\n", s.name, s.kind, s.state)
	}
	fmt.Fprintf(w, "  Web UI: %s\n", r.Link(runID))
	return nil
}

func cmpStatus(s agent.Status) agent.Status {
	if s == "" {
		return "unknown status"
	}
	return s
}

// oneLine keeps an error's text on one line.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

type historyStep struct {
	name, kind, state string
}

// historySteps lists the steps of a run's current execution from its
// activity events: each activity id (the step name, "#N" for a write run
// again) once, in the order they were scheduled, with its last state.
func (r *Remote) historySteps(ctx context.Context, runID string) ([]historyStep, error) {
	var steps []historyStep
	byEvent := map[int64]int{} // scheduled event id -> index in steps
	it := r.Conn.GetWorkflowHistory(ctx, runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of run %s: %w", runID, err)
		}
		set := func(id int64, state string) {
			if i, ok := byEvent[id]; ok {
				steps[i].state = state
			}
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			kind := "tool"
			switch activities.Method(a.GetActivityType().GetName()) {
			case "CallModel":
				kind = string(agent.KindModel)
			case "ListTools", "ListAgentTools":
				kind = "tools"
			}
			byEvent[e.GetEventId()] = len(steps)
			steps = append(steps, historyStep{name: a.GetActivityId(), kind: kind, state: "scheduled"})
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			set(e.GetActivityTaskStartedEventAttributes().GetScheduledEventId(), "started")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			set(e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId(), "completed")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			set(e.GetActivityTaskFailedEventAttributes().GetScheduledEventId(), "failed")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			set(e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId(), "timed out")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			set(e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), "cancelled")
		}
	}
	return steps, nil
}
