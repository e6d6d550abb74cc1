package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/testkit/jaegertest"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
	"github.com/agentrun/agentrun/workflows"
)

// traceParams sizes the tracing section.
type traceParams struct {
	// Turns is how many tool-calling turns each run has; a final answer
	// follows.
	Turns int
	// Rounds is how many measured runs of each kind alternate, after one
	// warm-up run of each.
	Rounds int
}

// traceService is the service.name of the traced side's spans.
const traceService = "agentrun-bench"

// traceToolOutput is the size of the traced runs' tool outputs: a small
// one, kept inline, so that the runs differ from the encryption section's
// and the spans are a larger part of a step.
const traceToolOutput = 400

// tracingOverhead runs the same AgentRun runs with tracing on (the sdk's
// tracing interceptor on the client and worker, agentrun's step spans,
// exported over OTLP/gRPC to a Jaeger on loopback, every run sampled)
// and off, alternating, and compares their time per activity. Then it
// reads the traced runs back from Jaeger: each must be there as one trace
// with one step span per activity. Without the Jaeger program the rows
// say why they were not measured.
func tracingOverhead(ctx context.Context, env *benchEnv, p traceParams) ([]row, error) {
	sec := fmt.Sprintf("Tracing: AgentRun runs of %d turns, with tracing on (the sdk's interceptor and agentrun's step spans, every run sampled, exported over OTLP/gRPC to Jaeger on loopback) vs off, %d alternating rounds each",
		p.Turns, p.Rounds)
	stepFig := "ms per activity, traced vs untraced (median of rounds)"
	spanFig := "step spans in Jaeger per traced step (chat and execute_tool), vs one"
	bin, err := jaegertest.Binary()
	var j *jaegertest.Jaeger
	if err == nil {
		j, err = jaegertest.Run(ctx, bin, env.subdir("jaeger"))
	}
	if err != nil {
		why := fmt.Sprintf("no Jaeger (make jaeger builds it): %v", err)
		return []row{{Section: sec, Figure: stepFig, Missing: why}, {Section: sec, Figure: spanFig, Missing: why}}, nil
	}
	defer j.Stop()
	prov, err := export.Start(ctx, export.Settings{Protocol: export.ProtocolGRPC, Endpoint: j.OTLPEndpoint, ServiceName: traceService}, traceService, operator.Signals(), env.logger)
	if err != nil {
		return nil, err
	}
	defer prov.Shutdown(ctx)

	var script llm.Script
	for i := 1; i <= p.Turns; i++ {
		script.Turns = append(script.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "read_notes", Args: json.RawMessage(fmt.Sprintf(`{"line":%d}`, i))}}})
	}
	script.Turns = append(script.Turns, llm.Turn{Text: "Summary: the notes are read."})
	n := activityCount(p.Turns)

	var sides [2]*pairSide
	for i, traced := range []bool{false, true} {
		s := &pairSide{name: "untraced"}
		var opts agentOptions
		var set func(*client.Options)
		if traced {
			s.name, opts.tracer = "traced", prov.Tracer()
			set = func(o *client.Options) { o.Interceptors = prov.ClientInterceptors() }
		}
		s.queue = "bench-" + s.name
		if s.client, err = env.dialWith(nil, set); err != nil {
			return nil, err
		}
		defer s.client.Close()
		dir := env.subdir("tracing-" + s.name)
		if s.store, err = content.NewFileStore(dir + "/content"); err != nil {
			return nil, err
		}
		stop, err := startSide(env, s, dir, script, opts, traceToolOutput)
		if err != nil {
			return nil, err
		}
		defer stop()
		sides[i] = s
	}
	in := workflows.Input{Messages: agent.UserMessages("Read the support notes and sum them up."), MaxTurns: p.Turns + 1}
	if err := runPaired(ctx, "trace", sides, in, n, p.Rounds, nil); err != nil {
		return nil, err
	}
	off, on := sides[0], sides[1]
	rows := []row{{Section: sec, Figure: stepFig, Measured: ms(median(on.times)), Baseline: ms(median(off.times)), Unit: "ms", Goal: 1.05}}

	// Every traced run reached Jaeger, each as one trace of its own with
	// a step span per activity.
	if err := prov.Shutdown(ctx); err != nil { // flushes what is queued
		return nil, fmt.Errorf("tracing: flush: %w", err)
	}
	traces, err := j.Traces(ctx, traceService)
	if err != nil {
		return nil, fmt.Errorf("tracing: read back: %w", err)
	}
	steps := map[string]int{}      // run id → its step spans
	inTrace := map[string]string{} // run id → the trace its spans are in
	for _, t := range traces {
		for _, s := range t.Spans {
			run := s.Attr(string(tracing.KeyRunID))
			if run == "" {
				continue
			}
			if other, ok := inTrace[run]; ok && other != t.ID {
				return nil, fmt.Errorf("tracing: run %s has spans in traces %s and %s; want one", run, other, t.ID)
			}
			inTrace[run] = t.ID
			if strings.HasPrefix(s.Name, "chat ") || strings.HasPrefix(s.Name, "execute_tool ") {
				steps[run]++
			}
		}
	}
	// Every activity but ListTools is a step with a span.
	var total int
	for _, id := range on.ids {
		if steps[id] != n-1 {
			return nil, fmt.Errorf("tracing: run %s has %d step spans in Jaeger, want %d (one per step)", id, steps[id], n-1)
		}
		total += steps[id]
	}
	rows = append(rows, row{Section: sec, Figure: spanFig,
		Measured: float64(total) / float64(len(on.ids)*(n-1)), Baseline: 1, Unit: ""})
	return rows, nil
}
