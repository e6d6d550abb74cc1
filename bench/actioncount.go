package main

import (
	"context"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// Counting Temporal Cloud's billable actions in a history, by its
// published list (docs.temporal.io/cloud/actions; see doc.go).

// Kinds of billable actions, as countActions names them.
const (
	actStart     = "workflow started"                     // client start, continue-as-new (the new execution's started event)
	actChild     = "child workflow start"                 // 2 per StartChildWorkflowExecutionInitiated
	actActivity  = "activity scheduled"                   // ActivityTaskScheduled
	actRetry     = "activity retry"                       // ActivityTaskStarted attempt - 1
	actLocal     = "markers (local activities, versions)" // one per workflow task that recorded markers, and local activity retries
	actUpsert    = "search attribute upsert"              // UpsertWorkflowSearchAttributes, except TemporalChangeVersion alone
	actSignal    = "signal"                               // WorkflowExecutionSignaled
	actUpdate    = "update accepted"                      // WorkflowExecutionUpdateAccepted
	actTimer     = "timer started"                        // TimerStarted
	actOptions   = "workflow options updated"             // WorkflowExecutionOptionsUpdated
	actReset     = "reset"                                // WorkflowTaskFailed caused by a reset
	actNexus     = "nexus operation"                      // NexusOperationScheduled, NexusOperationCancelRequested
	actHeartbeat = "activity heartbeat (RPCs)"            // not in a history: the worker's RecordActivityTaskHeartbeat calls
)

// actionKinds orders the kinds in the table's breakdowns.
var actionKinds = []string{actStart, actChild, actActivity, actRetry, actLocal, actHeartbeat, actUpsert, actSignal, actUpdate, actTimer, actOptions, actReset, actNexus}

// changeVersionAttribute is the search attribute the SDKs upsert for
// workflow versioning; Temporal Cloud does not bill its upserts.
const changeVersionAttribute = "TemporalChangeVersion"

// actions counts billable actions by kind.
type actions map[string]int

// total is the sum over the kinds.
func (a actions) total() int {
	n := 0
	for _, v := range a {
		n += v
	}
	return n
}

// add returns a + b.
func (a actions) add(b actions) actions {
	sum := actions{}
	for k, v := range a {
		sum[k] += v
	}
	for k, v := range b {
		sum[k] += v
	}
	return sum
}

// per lists the kinds a counts, each divided by n, in actionKinds' order:
// "activity scheduled 2.00, search attribute upsert 1.50".
func (a actions) per(n float64) string {
	var parts []string
	for _, k := range actionKinds {
		if a[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(a[k])/n))
		}
	}
	return orNone(strings.Join(parts, ", "))
}

// countActions counts the billable actions in one execution's history
// events, by Temporal Cloud's list: a start (but not a child's, which its
// parent's initiated event bills, 2 actions); each activity scheduled and
// each retry (an ActivityTaskStarted's attempt - 1); the markers of one
// workflow task as one action (local activities) and their retries
// (WorkflowTaskCompleted's metering metadata); each search attribute
// upsert unless it sets TemporalChangeVersion alone; each signal received,
// update accepted, timer started, options update, reset and Nexus
// operation scheduled or cancelled. What a history does not hold
// (heartbeats, queries, rejected updates) is not counted here.
func countActions(events []*historypb.HistoryEvent) actions {
	a := actions{}
	markerTasks := map[int64]bool{} // workflow task completed event id → recorded markers
	for _, e := range events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			if e.GetWorkflowExecutionStartedEventAttributes().GetParentWorkflowExecution() == nil {
				a[actStart]++
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a[actChild] += 2
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a[actActivity]++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if at := e.GetActivityTaskStartedEventAttributes().GetAttempt(); at > 1 {
				a[actRetry] += int(at - 1)
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			markerTasks[e.GetMarkerRecordedEventAttributes().GetWorkflowTaskCompletedEventId()] = true
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			a[actLocal] += int(e.GetWorkflowTaskCompletedEventAttributes().GetMeteringMetadata().GetNonfirstLocalActivityExecutionAttempts())
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			fields := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
			if _, ok := fields[changeVersionAttribute]; !ok || len(fields) > 1 {
				a[actUpsert]++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a[actSignal]++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a[actUpdate]++
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			a[actTimer]++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
			a[actOptions]++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if e.GetWorkflowTaskFailedEventAttributes().GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
				a[actReset]++
			}
		case enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED, enumspb.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
			a[actNexus]++
		}
	}
	a[actLocal] += len(markerTasks)
	for k, v := range a {
		if v == 0 {
			delete(a, k)
		}
	}
	return a
}

// historyEvents reads the events of run id's latest execution.
func historyEvents(ctx context.Context, c client.Client, id string) ([]*historypb.HistoryEvent, error) {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", id, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// runActions counts the billable actions of the runs ids (their latest
// executions), plus the heartbeats among calls, the RPCs of the worker
// that ran them (nil: none counted). It returns the activities the runs
// scheduled too.
func runActions(ctx context.Context, c client.Client, calls map[string]int64, ids ...string) (actions, int, error) {
	sum := actions{}
	for _, id := range ids {
		events, err := historyEvents(ctx, c, id)
		if err != nil {
			return nil, 0, err
		}
		sum = sum.add(countActions(events))
	}
	if hb := calls["RecordActivityTaskHeartbeat"] + calls["RecordActivityTaskHeartbeatById"]; hb > 0 {
		sum[actHeartbeat] += int(hb)
	}
	return sum, sum[actActivity], nil
}
