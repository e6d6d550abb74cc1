package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// recorder is tracing through an in-memory exporter.
func recorder(t *testing.T, capture bool) (*tracing.Provider, *tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p, err := tracing.New(tp, nil, capture, operator.Signals())
	if err != nil {
		t.Fatal(err)
	}
	return p, exp, tp
}

// handExample runs the hand example (approved by signal after a minute)
// in the sdk's test environment with the tracing interceptor and the real
// activities, and returns the run's final state.
func handExample(t *testing.T, p *tracing.Provider) workflows.State {
	t.Helper()
	return handExampleBy(t, p, false)
}

// handExampleBy is handExample, approved by update when byUpdate.
func handExampleBy(t *testing.T, p *tracing.Provider, byUpdate bool) workflows.State {
	t.Helper()
	tickets := filepath.Join(t.TempDir(), "tickets.jsonl")
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: tickets})...)
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: p.WorkerInterceptors()})
	env.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	activities.Register(env, &activities.Activities{
		Exec:     &execute.Executor{Model: llm.NewScripted(llm.HandExample()), Tools: set, Content: content.NewMemStore()},
		Guard:    &journal.Guard{Store: journal.NewMemStore()},
		NoStream: true,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tracer:   p.Tracer(),
		Capture:  p.Capture(),
		SignalRun: func(context.Context, activities.RetryNotice) error {
			return nil
		},
	}, false)

	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "hand-1"})
	env.RegisterDelayedCallback(func() {
		approve := map[string]string{"Marker": hand.TicketStep}
		if byUpdate {
			env.UpdateWorkflow(operator.SignalApprove, "approve-1", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { t.Errorf("approve update rejected: %v", err) },
			}, approve)
			return
		}
		env.SignalWorkflow(operator.SignalApprove, approve)
	}, time.Minute)
	env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(hand.Prompt)})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("run: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	v, err := env.QueryWorkflow(workflows.QueryState)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.State
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestHandExampleTrace: the hand example is one trace with exactly one
// span per step attempt (three chat spans, two execute_tool spans) with
// the GenAI attributes, whose tokens add up to the usage the run's state
// reports; the write's span says the guard ran it; the approval is one
// "wait approval" span of the minute the run waited, answered by signal; no RunWorkflow span is
// recorded (a replay would re-send it) and no span carries text.
func TestHandExampleTrace(t *testing.T) {
	t.Parallel()
	p, exp, _ := recorder(t, false)
	st := handExample(t, p)
	spans := exp.GetSpans().Snapshots()
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	traceID := spans[0].SpanContext().TraceID()
	var chats, toolSpans []string
	var in, out int64
	waits := 0
	for _, s := range spans {
		if s.SpanContext().TraceID() != traceID {
			t.Errorf("span %q in trace %s, want all in %s", s.Name(), s.SpanContext().TraceID(), traceID)
		}
		a := attrs(s)
		for _, k := range tracing.ContentKeys {
			if _, ok := a[k]; ok {
				t.Errorf("span %q carries %s with content capture off", s.Name(), k)
			}
		}
		switch {
		case s.Name() == "chat scripted":
			chats = append(chats, a[tracing.KeyStep].AsString())
			if a[tracing.KeyOperation].AsString() != "chat" || a[tracing.KeyProvider].AsString() != "scripted" ||
				a[tracing.KeyRequestModel].AsString() != "scripted" || a[tracing.KeyResponseModel].AsString() != "scripted" ||
				len(a[tracing.KeyFinishReasons].AsStringSlice()) != 1 || a[tracing.KeyAttempt].AsInt64() != 1 {
				t.Errorf("chat span %v: attributes %v", a[tracing.KeyStep], s.Attributes())
			}
			in += a[tracing.KeyInputTokens].AsInt64()
			out += a[tracing.KeyOutputTokens].AsInt64()
		case s.Name() == "execute_tool lookup" || s.Name() == "execute_tool create_ticket":
			toolSpans = append(toolSpans, a[tracing.KeyStep].AsString())
			if a[tracing.KeyOperation].AsString() != "execute_tool" || a[tracing.KeySettle].AsString() != "none" {
				t.Errorf("tool span %s: attributes %v", s.Name(), s.Attributes())
			}
			if s.Name() == "execute_tool create_ticket" && (a[tracing.KeyToolKind].AsString() != "write" || a[tracing.KeyGuardDecision].AsString() != tracing.GuardRan) {
				t.Errorf("write span: kind %v, guard decision %v; want write, ran", a[tracing.KeyToolKind], a[tracing.KeyGuardDecision])
			}
			if s.Name() == "execute_tool lookup" && (a[tracing.KeyToolKind].AsString() != "read" || a[tracing.KeyGuardDecision].AsString() != "") {
				t.Errorf("read span: kind %v, guard decision %v; want read, none", a[tracing.KeyToolKind], a[tracing.KeyGuardDecision])
			}
		case s.Name() == "wait approval":
			waits++
			if a[tracing.KeyWaitOutcome].AsString() != "approve" || a[tracing.KeyAnsweredBy].AsString() != tracing.BySignal ||
				a[tracing.KeyMarker].AsString() != hand.TicketStep || s.EndTime().Sub(s.StartTime()) != time.Minute {
				t.Errorf("wait span: attributes %v, %v long; want approve by signal on %s, 1m", s.Attributes(), s.EndTime().Sub(s.StartTime()), hand.TicketStep)
			}
		case len(s.Name()) > 12 && s.Name()[:12] == "RunWorkflow:":
			t.Errorf("a RunWorkflow span was recorded: %q", s.Name())
		}
	}
	slices.Sort(chats)
	slices.Sort(toolSpans)
	if want := []string{"llm/1", "llm/2", "llm/3"}; !slices.Equal(chats, want) {
		t.Errorf("chat spans for steps %v, want exactly %v", chats, want)
	}
	if want := []string{hand.LookupStep, hand.TicketStep}; !slices.Equal(toolSpans, []string{want[0], want[1]}) && !slices.Equal(toolSpans, []string{want[1], want[0]}) {
		t.Errorf("tool spans for steps %v, want exactly %v", toolSpans, want)
	}
	if waits != 1 {
		t.Errorf("%d approval wait spans, want 1", waits)
	}
	if st.Usage.InputTokens == 0 || in != st.Usage.InputTokens || out != st.Usage.OutputTokens {
		t.Errorf("span tokens in %d out %d; the state reports %+v", in, out, st.Usage)
	}
}

// TestApprovalByUpdateTrace: an approval that comes by update is one
// "wait approval" span answered by update, in the run's trace.
func TestApprovalByUpdateTrace(t *testing.T) {
	t.Parallel()
	p, exp, _ := recorder(t, false)
	handExampleBy(t, p, true)
	spans := exp.GetSpans().Snapshots()
	var waits []string
	for _, s := range spans {
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("span %q outside the run's trace", s.Name())
		}
		if s.Name() == "wait approval" {
			a := attrs(s)
			waits = append(waits, a[tracing.KeyWaitOutcome].AsString()+" by "+a[tracing.KeyAnsweredBy].AsString())
		}
	}
	if want := []string{"approve by update"}; !slices.Equal(waits, want) {
		t.Fatalf("wait spans %v, want %v", waits, want)
	}
}

// TestContentCapture: with capture on, the chat spans carry the step's new
// messages and the reply, and the tool spans their arguments and result.
func TestContentCapture(t *testing.T) {
	t.Parallel()
	p, exp, _ := recorder(t, true)
	handExample(t, p)
	var withText int
	for _, s := range exp.GetSpans().Snapshots() {
		a := attrs(s)
		switch s.Name() {
		case "chat scripted":
			if a[tracing.KeyInputMessages].AsString() == "" || a[tracing.KeyOutputMessages].AsString() == "" {
				t.Errorf("chat span %v without its text: %v", a[tracing.KeyStep], s.Attributes())
			}
			withText++
		case "execute_tool lookup", "execute_tool create_ticket":
			if a[tracing.KeyToolArguments].AsString() == "" || a[tracing.KeyToolResult].AsString() == "" {
				t.Errorf("tool span %s without its text: %v", s.Name(), s.Attributes())
			}
			withText++
		}
	}
	if withText != 5 {
		t.Errorf("%d step spans with text, want 5", withText)
	}
}

// TestReplayEmitsNothing: replaying committed histories (the hand example,
// a run that continued as new, a SIGKILLed write reconciled with retry)
// with the tracing interceptor records no span.
func TestReplayEmitsNothing(t *testing.T) {
	t.Parallel()
	p, exp, tp := recorder(t, false)
	for _, f := range []string{"hand-signals.json", "hand-updates.json", "continue-as-new-1.json", "continue-as-new-2.json", "continue-as-new-3.json", "indeterminate-retry.json"} {
		r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: p.WorkerInterceptors()})
		if err != nil {
			t.Fatal(err)
		}
		r.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("..", "..", "workflows", "testdata", f)); err != nil {
			t.Fatalf("replay %s: %v", f, err)
		}
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans().Snapshots(); len(spans) != 0 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name())
		}
		t.Fatalf("replays recorded %d spans %v, want none", len(spans), names)
	}
}
