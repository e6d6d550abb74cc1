package main

import (
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
)

// TestStepOverheadAlone runs the step overhead section alone, as -quick
// sizes it: every AgentRun run answers after its turns (the section
// checks), the time per activity and the history bytes per activity are
// measured on both sides, with their 1.05 and 1.5 goals, and the finding
// splits the bytes by part.
func TestStepOverheadAlone(t *testing.T) {
	p := paramsFor(true).steps
	res, err := stepOverhead(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	var hist, time *row
	for i, r := range res.rows {
		switch r.Figure {
		case "history bytes per activity":
			hist = &res.rows[i]
		case "ms per activity, AgentRun vs bare chain (median of rounds)":
			time = &res.rows[i]
		}
	}
	if hist == nil || time == nil {
		t.Fatalf("rows %+v lack the time or the history bytes per activity", res.rows)
	}
	for _, r := range []*row{time, hist} {
		if r.Missing != "" || r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v (%s); want both measured", r.Figure, r.Measured, r.Baseline, r.Missing)
		}
	}
	if time.Goal != 1.05 || hist.Goal != 1.5 {
		t.Errorf("goals %v and %v, want 1.05 and 1.5", time.Goal, hist.Goal)
	}
	// The chains that carry AgentRun's bytes ran, carrying what its
	// warm-up run's activities carried, and so did the pair with gRPC
	// compression off.
	for _, prefix := range []string{"ms per activity, a bare chain carrying AgentRun's bytes (", "ms per activity, that chain with AgentRun's ", "ms per activity, AgentRun vs that chain",
		figOffPair, figAgentRunGzip, figBareGzip} {
		var found *row
		for i, r := range res.rows {
			if strings.HasPrefix(r.Figure, prefix) {
				found = &res.rows[i]
			}
		}
		if found == nil || found.Measured <= 0 || found.Baseline <= 0 {
			t.Errorf("row %q: %+v; want it measured against its baseline", prefix, found)
		}
	}
	// An AgentRun step records its input and its result; a bare one
	// neither: more bytes, never fewer.
	if hist.Ratio() <= 1 {
		t.Errorf("history bytes per activity %.0f vs the bare chain's %.0f; want more", hist.Measured, hist.Baseline)
	}
	var parts string
	for _, f := range res.findings {
		if strings.HasPrefix(f, "History bytes per activity, AgentRun vs bare chain, by part") {
			parts = f
		}
	}
	for _, part := range byteParts {
		if !strings.Contains(parts, part+" ") {
			t.Errorf("finding %q lacks the part %q", parts, part)
		}
	}
	t.Logf("%s: %.0f B vs %.0f B (%.2fx)\n%s", hist.Figure, hist.Measured, hist.Baseline, hist.Ratio(), parts)
}

// TestHistoryBytesParts: the parts of a history's bytes add up to its size.
func TestHistoryBytesParts(t *testing.T) {
	t.Parallel()
	h := historyBytes{parts: map[string]int{}}
	for _, e := range sampleEvents() {
		h.add(e)
	}
	sum := 0
	for _, part := range byteParts {
		sum += h.parts[part]
	}
	if sum != h.total || h.parts[partInputs] == 0 || h.parts[partResults] == 0 || h.parts[partSummary] == 0 || h.parts[partRetry] == 0 {
		t.Fatalf("parts %v add up to %d of %d bytes; want every part counted and the sum the size", h.parts, sum, h.total)
	}
}

// TestInputFields: an input's JSON bytes by field add up to its data, a
// step's and a model input's fields counted one by one.
func TestInputFields(t *testing.T) {
	t.Parallel()
	data := `{"step":{"name":"llm/1","kind":"model","model":{"new":[{"role":"user","content":"hi"}],"tools":"sha256:ab"}},"catalog":"sha256:cd"}`
	fields := map[string]int{}
	inputFields([]byte(data), "", fields)
	inputFields([]byte(`"not an object"`), "", fields)
	want := map[string]int{
		"catalog":          len(`"catalog":"sha256:cd",`),
		"step.name":        len(`"name":"llm/1",`),
		"step.kind":        len(`"kind":"model",`),
		"step.model.tools": len(`"tools":"sha256:ab",`),
		"step.model.new":   len(`"new":[{"role":"user","content":"hi"}],`),
	}
	sum := 0
	for k, n := range fields {
		sum += n
		if w, ok := want[k]; ok && n != w {
			t.Errorf("field %s: %d B, want %d", k, n, w)
		}
	}
	for k := range want {
		if _, ok := fields[k]; !ok {
			t.Errorf("field %s not counted: %v", k, fields)
		}
	}
	if all := len(data) + len(`"not an object"`); sum != all {
		t.Fatalf("fields %v add up to %d B, want the data's %d", fields, sum, all)
	}
	if got := fieldsShown(map[string]int{"catalog": 166, "step.name": 20, "spec": 1}, 2); got != "catalog 83 B, step.name 10 B" {
		t.Fatalf("fieldsShown = %q", got)
	}
}

// sampleEvents are an activity's scheduled event (input, summary, retry
// policy) and its completed event (result).
func sampleEvents() []*historypb.HistoryEvent {
	payloads := func(data string) *commonpb.Payloads {
		return &commonpb.Payloads{Payloads: []*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(data)}}}
	}
	return []*historypb.HistoryEvent{
		{
			EventId: 5, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
			UserMetadata: &sdkpb.UserMetadata{Summary: &commonpb.Payload{Data: []byte(`"llm/1 · scripted"`)}},
			Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityId: "llm/1", ActivityType: &commonpb.ActivityType{Name: "CallModel"},
				Input:       payloads(`{"step":{"name":"llm/1"}}`),
				RetryPolicy: &commonpb.RetryPolicy{MaximumAttempts: 10, NonRetryableErrorTypes: []string{"BadRequest"}},
			}},
		},
		{
			EventId: 7, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
			Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				Result: payloads(`{"message":{"role":"assistant"}}`), ScheduledEventId: 5, Identity: "1@host",
			}},
		},
	}
}
