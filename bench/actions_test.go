package main

import (
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
)

// ev builds a history event of type t with attributes set by attrs.
func ev(id int64, t enumspb.EventType, attrs func(*historypb.HistoryEvent)) *historypb.HistoryEvent {
	e := &historypb.HistoryEvent{EventId: id, EventType: t}
	if attrs != nil {
		attrs(e)
	}
	return e
}

func started(parent bool) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		a := &historypb.WorkflowExecutionStartedEventAttributes{}
		if parent {
			a.ParentWorkflowExecution = &commonpb.WorkflowExecution{WorkflowId: "parent"}
		}
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: a}
	}
}

func activityStarted(attempt int32) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{Attempt: attempt}}
	}
}

func marker(task int64) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{MarkerName: "LocalActivity", WorkflowTaskCompletedEventId: task}}
	}
}

func taskCompleted(localRetries int32) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{
			MeteringMetadata: &commonpb.MeteringMetadata{NonfirstLocalActivityExecutionAttempts: uint32(localRetries)}}}
	}
}

func upsert(names ...string) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		fields := map[string]*commonpb.Payload{}
		for _, n := range names {
			fields[n] = &commonpb.Payload{Data: []byte(`"x"`)}
		}
		e.Attributes = &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: fields}}}
	}
}

func taskFailed(cause enumspb.WorkflowTaskFailedCause) func(*historypb.HistoryEvent) {
	return func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskFailedEventAttributes{WorkflowTaskFailedEventAttributes: &historypb.WorkflowTaskFailedEventAttributes{Cause: cause}}
	}
}

// TestCountActions: countActions bills each event as Temporal Cloud's list
// says, on small hand-made histories.
func TestCountActions(t *testing.T) {
	const (
		wfStarted = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
		wftSched  = enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
		wftDone   = enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
		actSched  = enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
		aStart    = enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED
		actDone   = enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
	)
	for _, tc := range []struct {
		name   string
		events []*historypb.HistoryEvent
		want   actions
	}{
		{"a bare chain of two activities, the second retried twice", []*historypb.HistoryEvent{
			ev(1, wfStarted, started(false)), ev(2, wftSched, nil), ev(4, wftDone, taskCompleted(0)),
			ev(5, actSched, nil), ev(6, aStart, activityStarted(1)), ev(7, actDone, nil),
			ev(8, actSched, nil), ev(9, aStart, activityStarted(3)), ev(10, actDone, nil),
			ev(11, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, nil),
		}, actions{actStart: 1, actActivity: 2, actRetry: 2}},
		{"a child's history: its start is billed on its parent", []*historypb.HistoryEvent{
			ev(1, wfStarted, started(true)), ev(5, actSched, nil), ev(6, aStart, activityStarted(1)),
		}, actions{actActivity: 1}},
		{"a parent starting a child: 2 actions", []*historypb.HistoryEvent{
			ev(1, wfStarted, started(false)), ev(5, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, nil),
			ev(6, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, nil), ev(7, enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, nil),
		}, actions{actStart: 1, actChild: 2}},
		{"three markers of one workflow task are one action, one of another task another, local retries each", []*historypb.HistoryEvent{
			ev(4, wftDone, taskCompleted(2)), ev(5, enumspb.EVENT_TYPE_MARKER_RECORDED, marker(4)), ev(6, enumspb.EVENT_TYPE_MARKER_RECORDED, marker(4)),
			ev(7, enumspb.EVENT_TYPE_MARKER_RECORDED, marker(4)), ev(10, wftDone, taskCompleted(0)), ev(11, enumspb.EVENT_TYPE_MARKER_RECORDED, marker(10)),
		}, actions{actLocal: 4}},
		{"upserts: one each, several attributes at once one, TemporalChangeVersion alone none", []*historypb.HistoryEvent{
			ev(5, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, upsert("AgentRunStatus")),
			ev(6, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, upsert("AgentRunStatus", "AgentRunStep")),
			ev(7, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, upsert(changeVersionAttribute)),
			ev(8, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, upsert(changeVersionAttribute, "AgentRunStep")),
		}, actions{actUpsert: 3}},
		{"signals, updates, timers, options, a reset, Nexus; not queries' or workflow tasks' events", []*historypb.HistoryEvent{
			ev(5, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, nil), ev(6, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, nil),
			ev(7, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, nil), ev(8, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, nil),
			ev(9, enumspb.EVENT_TYPE_TIMER_STARTED, nil), ev(10, enumspb.EVENT_TYPE_TIMER_FIRED, nil),
			ev(11, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED, nil),
			ev(12, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, taskFailed(enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW)),
			ev(13, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, taskFailed(enumspb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE)),
			ev(14, enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED, nil), ev(15, enumspb.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED, nil),
			ev(16, enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, nil),
			ev(17, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, nil),
		}, actions{actSignal: 2, actUpdate: 1, actTimer: 1, actOptions: 1, actReset: 1, actNexus: 2}},
	} {
		got := countActions(tc.events)
		if got.per(1) != tc.want.per(1) || got.total() != tc.want.total() {
			t.Errorf("%s: %s (%d); want %s (%d)", tc.name, got.per(1), got.total(), tc.want.per(1), tc.want.total())
		}
	}
}

// TestActionsQuick runs the actions section alone, as -quick sizes it:
// every side's run completes (the section checks each), every row has
// both counts, the model step and streamed turn rows carry the issue's
// goals, and the counts hold what the runs certainly billed: a bare chain
// of T+2 activities bills a start and its activities, no more; a streamed
// session's turns bill their publish signals.
func TestActionsQuick(t *testing.T) {
	p := paramsFor(true).actions
	rows, err := cloudActions(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0].Goal != actionsStepGoal || rows[2].Goal != actionsStreamGoal {
		t.Fatalf("rows %+v; want 5, the model step's with the %.1f goal and the streamed turn's with %.1f", rows, actionsStepGoal, actionsStreamGoal)
	}
	for _, r := range rows {
		if r.Measured <= 0 || r.Baseline <= 0 || r.Missing != "" {
			t.Errorf("%s: measured %v, baseline %v; want both counted", r.Figure, r.Measured, r.Baseline)
		}
	}
	steps := float64(p.Turns + 1)
	if want := float64(1+activityCount(p.Turns)) / steps; rows[0].Baseline != want {
		t.Errorf("bare chain: %.2f actions per model step; want %.2f (its start and %d activities over %v steps)", rows[0].Baseline, want, activityCount(p.Turns), steps)
	}
	// AgentRun's run schedules as many activities as the bare chain and
	// starts once: it bills at least as much.
	if rows[0].Measured < rows[0].Baseline {
		t.Errorf("AgentRun %.2f actions per model step, under the bare chain's %.2f", rows[0].Measured, rows[0].Baseline)
	}
	if !strings.Contains(rows[2].Figure, "AgentRun: ") || !strings.Contains(rows[2].Figure, actSignal) {
		t.Errorf("the streamed row bills no signals: %s", rows[2].Figure)
	}
	if rows[2].Measured <= rows[1].Measured {
		t.Errorf("a streamed turn bills %.2f actions, no more than an unstreamed one's %.2f", rows[2].Measured, rows[1].Measured)
	}
	for _, r := range rows {
		t.Logf("%s: %.2f vs %.2f (%.2f)", r.Figure, r.Measured, r.Baseline, r.Ratio())
	}
}
