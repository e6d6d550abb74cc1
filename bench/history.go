package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
)

// Where a step's time and bytes go: its history read back, phase by phase
// between events, and its bytes by part.

// Phases of a step, between history events.
const (
	phaseActStart   = "activity scheduled → started"
	phaseActRun     = "activity started → completed"
	phaseToWFT      = "activity completed → workflow task scheduled"
	phaseWFTStart   = "workflow task scheduled → started"
	phaseWFTRun     = "workflow task started → completed"
	phaseToActivity = "workflow task completed → next activity scheduled"
	phaseCycle      = "activity scheduled → next activity scheduled"
	phaseRunStart   = "run started → first activity scheduled"
	phaseRunEnd     = "last activity completed → run completed"
)

var phaseNames = []string{phaseActStart, phaseActRun, phaseToWFT, phaseWFTStart, phaseWFTRun, phaseToActivity, phaseCycle, phaseRunStart, phaseRunEnd}

// Parts of a history's bytes (historyBytes.parts).
const (
	partInputs  = "activity inputs"
	partResults = "activity results"
	partSummary = "step summaries (user metadata)"
	partRetry   = "retry policies"
	partFraming = "the rest (ids, times, task queues, identities, timeouts, workflow tasks, the run's start and end)"
)

var byteParts = []string{partInputs, partResults, partSummary, partRetry, partFraming}

// historyBytes is the size of histories: in all, and by part; and the
// activity inputs' JSON bytes by field (inputFields).
type historyBytes struct {
	total  int
	parts  map[string]int
	fields map[string]int
}

// add counts event e.
func (h *historyBytes) add(e *historypb.HistoryEvent) {
	size := proto.Size(e)
	h.total += size
	in, res := 0, 0
	summary := proto.Size(e.GetUserMetadata())
	retry := 0
	if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
		in, retry = proto.Size(a.GetInput()), proto.Size(a.GetRetryPolicy())
		if h.fields == nil {
			h.fields = map[string]int{}
		}
		for _, p := range a.GetInput().GetPayloads() {
			inputFields(p.GetData(), "", h.fields)
		}
	}
	if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
		res = proto.Size(a.GetResult())
	}
	h.parts[partInputs] += in
	h.parts[partResults] += res
	h.parts[partSummary] += summary
	h.parts[partRetry] += retry
	h.parts[partFraming] += size - in - res - summary - retry
}

// historyPhases returns the gaps of each phase over the histories of the
// runs ids, and the histories' size. Workflow task gaps count only the
// tasks that follow an activity's completion.
func historyPhases(ctx context.Context, c client.Client, ids []string) (map[string][]time.Duration, historyBytes, error) {
	gaps := map[string][]time.Duration{}
	size := historyBytes{parts: map[string]int{}}
	for _, id := range ids {
		var (
			events                      []*historypb.HistoryEvent
			scheduled                   = map[int64]time.Time{}
			started                     = map[int64]time.Time{}
			lastSched, actDone, wftDone time.Time
			wftSched, wftStart          time.Time
			runStart, lastActDone       time.Time
			afterActivity               bool
		)
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return nil, size, fmt.Errorf("history of %s: %w", id, err)
			}
			events = append(events, e)
			size.add(e)
		}
		add := func(phase string, from, to time.Time) {
			if !from.IsZero() {
				gaps[phase] = append(gaps[phase], to.Sub(from))
			}
		}
		for _, e := range events {
			t := e.GetEventTime().AsTime()
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				runStart = t
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
				add(phaseRunEnd, lastActDone, t)
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				scheduled[e.GetEventId()] = t
				if lastSched.IsZero() {
					add(phaseRunStart, runStart, t)
				}
				add(phaseCycle, lastSched, t)
				add(phaseToActivity, wftDone, t)
				lastSched, wftDone = t, time.Time{}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := e.GetActivityTaskStartedEventAttributes()
				started[e.GetEventId()] = t
				add(phaseActStart, scheduled[a.GetScheduledEventId()], t)
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := e.GetActivityTaskCompletedEventAttributes()
				add(phaseActRun, started[a.GetStartedEventId()], t)
				actDone, lastActDone = t, t
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				afterActivity = !actDone.IsZero()
				add(phaseToWFT, actDone, t)
				wftSched, actDone = t, time.Time{}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				wftStart = t
				if afterActivity {
					add(phaseWFTStart, wftSched, t)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if afterActivity {
					add(phaseWFTRun, wftStart, t)
					wftDone = t
				}
			}
		}
	}
	return gaps, size, nil
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func perActivity(calls map[string]int64, activities float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range calls {
		out[k] = float64(v) / activities
	}
	return out
}

func sumCalls(calls map[string]float64) float64 {
	s := 0.0
	for _, v := range calls {
		s += v
	}
	return s
}

// compareCalls lists each RPC method with its calls per activity on both
// sides, the largest difference first.
func compareCalls(a, b map[string]float64) string {
	var methods []string
	for m := range a {
		methods = append(methods, m)
	}
	for m := range b {
		if _, ok := a[m]; !ok {
			methods = append(methods, m)
		}
	}
	slices.SortFunc(methods, func(x, y string) int {
		return cmp.Or(cmp.Compare(a[y]-b[y], a[x]-b[x]), cmp.Compare(x, y))
	})
	var parts []string
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %.2f vs %.2f", m, a[m], b[m]))
	}
	return orNone(strings.Join(parts, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// inputFields adds the bytes of each field of an activity input's JSON
// object data to fields, by path: "catalog", "step.name",
// "step.model.tools" (a step's and a model input's fields are counted one
// by one). A field counts its name, its value and the quotes, colon and
// comma around them; the braces, and data that is not a JSON object,
// count as the object's framing ("(framing)", "step (framing)").
func inputFields(data []byte, prefix string, fields map[string]int) {
	framing := "(framing)"
	if prefix != "" {
		framing = strings.TrimSuffix(prefix, ".") + " (framing)"
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		fields[framing] += len(data)
		return
	}
	used := 0
	for k, v := range obj {
		n := len(k) + 4 + len(v)
		used += n
		if path := prefix + k; path == "step" || path == "step.model" {
			fields[path+" (framing)"] += n - len(v)
			inputFields(v, path+".", fields)
			continue
		}
		fields[prefix+k] += n
	}
	fields[framing] += len(data) - used
}

// fieldsShown lists fields per activity (bytes over per), largest first,
// those of at least 1 B.
func fieldsShown(fields map[string]int, per float64) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(fields[b], fields[a]), cmp.Compare(a, b)) })
	var out []string
	for _, k := range keys {
		if b := float64(fields[k]) / per; b >= 1 {
			out = append(out, fmt.Sprintf("%s %.0f B", k, b))
		}
	}
	return orNone(strings.Join(out, ", "))
}
