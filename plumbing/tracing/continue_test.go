package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// TestContinueAsNewOneTrace: a run started with a trace context (as the
// starter's client starts it) that continues as new after every step has
// all its spans, across its executions, in the starter's trace, exactly
// one chat or execute_tool span per step, none twice.
func TestContinueAsNewOneTrace(t *testing.T) {
	t.Parallel()
	const turns = 4
	var script llm.Script
	for i := 1; i < turns; i++ {
		script.Turns = append(script.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(fmt.Sprintf(`{"topic":"access %d"}`, i))}}})
	}
	script.Turns = append(script.Turns, llm.Turn{Text: "done"})
	p, exp, _ := recorder(t, false)
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})...)
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{
		Exec:      &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: content.NewMemStore()},
		Guard:     &journal.Guard{Store: journal.NewMemStore()},
		NoStream:  true,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tracer:    p.Tracer(),
		SignalRun: func(context.Context, activities.RetryNotice) error { return nil },
	}
	// The starter's span, as its client's interceptor puts it in the
	// start's header.
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	hp, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"traceparent": "00-" + traceID + "-" + spanID + "-01"})
	if err != nil {
		t.Fatal(err)
	}
	header := &commonpb.Header{Fields: map[string]*commonpb.Payload{"_tracer-data": hp}}
	in := workflows.Input{Messages: agent.UserMessages("look it up"), ContinueAfter: 1}
	executions := 0
	for run := 0; ; run++ {
		var s testsuite.WorkflowTestSuite
		s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(worker.Options{Interceptors: p.WorkerInterceptors()})
		env.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
		activities.Register(env, acts, false)
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "long-1"})
		env.SetHeader(header)
		if run > 0 {
			env.SetContinuedExecutionRunID(fmt.Sprintf("run-%d", run-1))
		}
		env.ExecuteWorkflow(workflows.AgentRun, in)
		executions++
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); !errors.As(err, &can) {
			if err != nil || !env.IsWorkflowCompleted() {
				t.Fatalf("execution %d: %v", run, err)
			}
			break
		}
		if run > 20 {
			t.Fatal("more than 20 executions")
		}
		header = can.Header // what the next execution starts with
		in = workflows.Input{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
	}
	if executions < 3 {
		t.Fatalf("%d executions, want the run to continue as new at least twice", executions)
	}
	steps := map[string]int{}
	for _, s := range exp.GetSpans().Snapshots() {
		if got := s.SpanContext().TraceID().String(); got != traceID {
			t.Errorf("span %q in trace %s, want the starter's %s", s.Name(), got, traceID)
		}
		if strings.HasPrefix(s.Name(), "chat ") || strings.HasPrefix(s.Name(), "execute_tool ") {
			for _, kv := range s.Attributes() {
				if kv.Key == tracing.KeyStep {
					steps[kv.Value.AsString()]++
				}
			}
		}
	}
	if len(steps) != 2*turns-1 {
		t.Errorf("spans for %d steps %v, want %d", len(steps), steps, 2*turns-1)
	}
	for step, n := range steps {
		if n != 1 {
			t.Errorf("step %s: %d spans, want 1", step, n)
		}
	}
}
