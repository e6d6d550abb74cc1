package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/jaegertest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
	"github.com/agentrun/agentrun/workflows"
)

// runTrace waits until Jaeger holds the trace of run (found through the
// worker's service: the trace of its spans that name the run) and until
// ready holds of it, then until its span count settles, and returns it. It
// fails the test when a span that names the run (by agentrun.run_id or the
// sdk's temporalWorkflowID) is in another trace.
func runTrace(t *testing.T, j *jaegertest.Jaeger, run string, timeout time.Duration, ready func(jaegertest.Trace) bool) jaegertest.Trace {
	t.Helper()
	var id string
	var tr jaegertest.Trace
	testenv.WaitFor(t, timeout, "the trace of "+run+" in Jaeger", func() bool {
		traces, err := j.Traces(t.Context(), export.ServiceWorker)
		if err != nil {
			return false
		}
		ids := map[string]bool{}
		for _, x := range traces {
			for _, s := range x.Spans {
				if names(s, run) {
					ids[x.ID] = true
				}
			}
		}
		if len(ids) > 1 {
			t.Fatalf("the spans of %s are in %d traces, want 1: %v", run, len(ids), slices.Sorted(maps.Keys(ids)))
		}
		for k := range ids {
			id = k
		}
		if id == "" {
			return false
		}
		tr, err = j.Trace(t.Context(), id)
		return err == nil && ready(tr)
	})
	return j.WaitTrace(t, id, len(tr.Spans), timeout)
}

// names says whether span s names the run: our attribute or the sdk's.
func names(s jaegertest.Span, run string) bool {
	return s.Attr(string(tracing.KeyRunID)) == run || s.Attr("temporalWorkflowID") == run
}

// stepSpans counts a trace's chat and execute_tool spans by step.
func stepSpans(tr jaegertest.Trace) map[string]int {
	n := map[string]int{}
	for _, s := range tr.Spans {
		if strings.HasPrefix(s.Name, "chat ") || strings.HasPrefix(s.Name, "execute_tool ") {
			n[s.Name+" "+s.Attr(string(tracing.KeyStep))]++
		}
	}
	return n
}

// noneTwice fails the test when two spans of tr have the same name and
// attributes (Jaeger's own tags aside): a span sent twice, as a replay
// would, with a new span id. The sdk's StartActivity spans carry only the
// workflow's ids, so theirs are told apart by their RunActivity children's
// activity ids; each must have one (a StartActivity span sent again by a
// replay would have none: the attempts hang off the first).
func noneTwice(t *testing.T, tr jaegertest.Trace) {
	t.Helper()
	seen := map[string]int{}
	for _, s := range tr.Spans {
		var b strings.Builder
		b.WriteString(s.Name)
		if strings.HasPrefix(s.Name, "StartActivity:") {
			var ids []string
			for _, c := range tr.Children(s.SpanID) {
				ids = append(ids, c.Attr("temporalActivityID"))
			}
			if len(ids) == 0 {
				t.Errorf("%s span %s has no RunActivity child", s.Name, s.SpanID)
			}
			slices.Sort(ids)
			fmt.Fprintf(&b, " activities=%v", ids)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Attrs)) {
			if k == "otel.scope.name" || k == "otel.scope.version" || k == "span.kind" || k == "otel.status_code" || k == "error" {
				continue
			}
			fmt.Fprintf(&b, " %s=%v", k, s.Attrs[k])
		}
		seen[b.String()]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("span sent %d times: %s", n, k)
		}
	}
}

// intAttr is an integer attribute of s, 0 when it has none.
func intAttr(t *testing.T, s jaegertest.Span, key string) int64 {
	t.Helper()
	v := s.Attr(key)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("span %s: %s=%q is not an integer", s.Name, key, v)
	}
	return n
}

// TestHandExampleJaegerTrace: the hand example, started by the starter,
// approved by reconcile approve and completed, with every program
// exporting to a real Jaeger. The trace read back holds all the run's
// spans: one chat span per model step (3) and one execute_tool span per
// tool step (2), with the GenAI attributes, their tokens adding up to the
// usage the run's state reports, the approval wait answered by update, and
// no span twice.
func TestHandExampleJaegerTrace(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(j.Env()...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-trace-hand"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "reconcile"), "approve", run, ticketStep); code != 0 {
		t.Fatalf("reconcile approve: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "Completed", time.Minute)

	// The starter's spans are the root: its service has the one trace.
	roots := j.WaitSpans(t, export.ServiceStarter, 1, time.Minute)
	tr := runTrace(t, j, run, time.Minute, func(tr jaegertest.Trace) bool {
		return len(stepSpans(tr)) == 5 && len(tr.Named("wait approval")) == 1
	})
	if roots[0].TraceID != tr.ID || roots[0].ParentID != "" {
		t.Fatalf("the starter's span %s is in trace %s with parent %q; want the root of the run's trace %s", roots[0].Name, roots[0].TraceID, roots[0].ParentID, tr.ID)
	}
	want := map[string]int{
		"chat scripted llm/1": 1, "chat scripted llm/2": 1, "chat scripted llm/3": 1,
		"execute_tool lookup tool/1/0/lookup": 1, "execute_tool create_ticket " + ticketStep: 1,
	}
	if got := stepSpans(tr); !maps.Equal(got, want) {
		t.Fatalf("step spans %v, want %v", got, want)
	}
	var in, out int64
	for _, s := range tr.Spans {
		switch {
		case strings.HasPrefix(s.Name, "chat "):
			if s.Attr(string(tracing.KeyOperation)) != "chat" || s.Attr(string(tracing.KeyProvider)) != "scripted" ||
				s.Attr(string(tracing.KeyRequestModel)) != "scripted" || s.Attr(string(tracing.KeyResponseModel)) != "scripted" ||
				s.Attr(string(tracing.KeyFinishReasons)) == "" || s.Attr(string(tracing.KeyAttempt)) != "1" || s.Attr(string(tracing.KeyRunID)) != run {
				t.Errorf("chat span of %s: attributes %v", s.Attr(string(tracing.KeyStep)), s.Attrs)
			}
			in += intAttr(t, s, string(tracing.KeyInputTokens))
			out += intAttr(t, s, string(tracing.KeyOutputTokens))
		case strings.HasPrefix(s.Name, "execute_tool "):
			kind, guard := "read", ""
			if s.Name == "execute_tool create_ticket" {
				kind, guard = "write", tracing.GuardRan
			}
			if s.Attr(string(tracing.KeyOperation)) != "execute_tool" || s.Attr(string(tracing.KeyToolName)) != strings.TrimPrefix(s.Name, "execute_tool ") ||
				s.Attr(string(tracing.KeyToolKind)) != kind || s.Attr(string(tracing.KeyGuardDecision)) != guard || s.Attr(string(tracing.KeySettle)) != "none" {
				t.Errorf("%s: attributes %v; want kind %s, guard decision %q, settle none", s.Name, s.Attrs, kind, guard)
			}
		case s.Name == "wait approval":
			if s.Attr(string(tracing.KeyWaitOutcome)) != "approve" || s.Attr(string(tracing.KeyAnsweredBy)) != tracing.ByUpdate ||
				s.Attr(string(tracing.KeyMarker)) != ticketStep {
				t.Errorf("wait approval: attributes %v; want approve by update on %s", s.Attrs, ticketStep)
			}
		case strings.HasPrefix(s.Name, "RunWorkflow:"):
			t.Errorf("a RunWorkflow span reached the backend: %s", s.Name)
		}
		for _, k := range tracing.ContentKeys {
			if s.Attr(string(k)) != "" {
				t.Errorf("span %s carries %s without content capture", s.Name, k)
			}
		}
	}
	if st.Usage.InputTokens == 0 || in != st.Usage.InputTokens || out != st.Usage.OutputTokens {
		t.Errorf("the chat spans' tokens: in %d, out %d; the run's state reports %+v", in, out, st.Usage)
	}
	noneTwice(t, tr)
	// The starter's root, and per activity (the tool list, 3 model and 2
	// tool steps) its StartActivity and RunActivity spans, the 5 step spans
	// and the wait.
	if len(tr.Spans) != 1+2*6+5+1 {
		t.Errorf("%d spans in the trace, want %d", len(tr.Spans), 1+2*6+5+1)
	}
	t.Logf("trace %s: %d spans", tr.ID, len(tr.Spans))
	// The waterfall README shows (docs/images/hand-example-trace.svg is a
	// copy of one): every span drawn once.
	svg := tr.SVG()
	for _, name := range []string{"StartWorkflow:AgentRun", "chat scripted", "execute_tool create_ticket", "wait approval"} {
		if !bytes.Contains(svg, []byte(">"+name)) {
			t.Errorf("the trace's picture has no %s row", name)
		}
	}
	if rows := bytes.Count(svg, []byte("<title>")); rows != len(tr.Spans) {
		t.Errorf("the trace's picture has %d bars, want one per span (%d)", rows, len(tr.Spans))
	}
	keepArtifact(t, "hand-example-trace.svg", svg)
}

// TestKilledModelCallJaegerTrace: a worker exporting to a real Jaeger runs
// the run alone until its second model call (15 s long) started and the
// earlier steps' spans reached Jaeger; a second worker starts polling and
// the first is SIGKILLed inside the model call. The second worker rebuilds
// the run from its history (a replay of llm/1 and lookup) and runs llm/2
// again. The trace holds one chat span for llm/2, the retried attempt's
// (attempt 2: the killed attempt's never ended, so it is never sent), one
// span for each other step (none from the replay), and no span twice.
func TestKilledModelCallJaegerTrace(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := append(f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"delay":"15s","text":"The VPN policy is in place."}]}`), j.Env()...)
	w1 := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-trace-kill"
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	// Wait until llm/1's and lookup's spans were exported (the exporter
	// sends every second: spans a killed worker ended in its last second
	// are lost, which is not what this test is about) and llm/2 runs on the
	// first worker.
	testenv.WaitFor(t, time.Minute, "llm/1's and lookup's spans in Jaeger, llm/2 running", func() bool {
		traces, err := j.Traces(t.Context(), export.ServiceWorker)
		if err != nil || len(traces) != 1 {
			return false
		}
		n := stepSpans(traces[0])
		if n["chat scripted llm/1"] != 1 || n["execute_tool lookup tool/1/0/lookup"] != 1 {
			return false
		}
		desc, err := srv.Describe(t, run)
		if err != nil {
			return false
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityId() == "llm/2" && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
	w2 := testenv.Start(t, env, testenv.Program(t, "worker"))
	w1.Kill(t)
	t.Logf("SIGKILLed worker %d while it ran llm/2", w1.Cmd.Process.Pid)
	st := waitStatus(t, srv, run, "Completed", 2*time.Minute)
	// Every workflow task before the kill was the first worker's; the
	// second completed some after it, so it replayed the run's history.
	byWorker := map[string]int{}
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			byWorker[strings.SplitN(a.GetIdentity(), "@", 2)[0]]++
		}
	}
	if byWorker[strconv.Itoa(w1.Cmd.Process.Pid)] == 0 || byWorker[strconv.Itoa(w2.Cmd.Process.Pid)] == 0 || len(byWorker) != 2 {
		t.Fatalf("workflow tasks completed by worker pid %v; want some by each of %d (killed) and %d", byWorker, w1.Cmd.Process.Pid, w2.Cmd.Process.Pid)
	}
	h := history(t, srv, run)
	if h.attempts["llm/2"] != 2 || h.attempts["llm/1"] != 1 || h.attempts[hand.LookupStep] != 1 {
		t.Fatalf("attempts %v, want llm/2 2 (the killed one timed out), llm/1 and lookup 1", h.attempts)
	}

	tr := runTrace(t, j, run, time.Minute, func(tr jaegertest.Trace) bool { return len(stepSpans(tr)) == 3 })
	want := map[string]int{"chat scripted llm/1": 1, "execute_tool lookup tool/1/0/lookup": 1, "chat scripted llm/2": 1}
	if got := stepSpans(tr); !maps.Equal(got, want) {
		t.Fatalf("step spans %v, want %v", got, want)
	}
	var in, out int64
	for _, s := range tr.Spans {
		step, attempt := s.Attr(string(tracing.KeyStep)), s.Attr(string(tracing.KeyAttempt))
		if strings.HasPrefix(s.Name, "chat ") {
			in += intAttr(t, s, string(tracing.KeyInputTokens))
			out += intAttr(t, s, string(tracing.KeyOutputTokens))
			if (step == "llm/2") != (attempt == "2") {
				t.Errorf("chat span of %s is attempt %s; want attempt 2 for llm/2 only", step, attempt)
			}
		}
	}
	if in != st.Usage.InputTokens || out != st.Usage.OutputTokens {
		t.Errorf("the chat spans' tokens: in %d, out %d; the run's state reports %+v", in, out, st.Usage)
	}
	// The root, per activity (the tool list, llm/1, lookup, llm/2) one
	// StartActivity and one RunActivity span (the killed attempt's never
	// ended), and the 3 step spans.
	if len(tr.Spans) != 1+2*4+3 {
		t.Errorf("%d spans in the trace, want %d", len(tr.Spans), 1+2*4+3)
	}
	noneTwice(t, tr)
	t.Logf("trace %s: %d spans", tr.ID, len(tr.Spans))
}

// TestContinueAsNewJaegerTrace: a run started by a client with the tracing
// interceptor (as the starter's), with ContinueAfter 2, continues as new
// twice (5 steps, 3 executions) on a worker exporting to a real Jaeger.
// All its spans, from every execution, are in the client's trace under its
// root: one span per step, per activity one StartActivity and one
// RunActivity span, none twice.
func TestContinueAsNewJaegerTrace(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	script := `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"tool_calls":[{"name":"lookup","args":{"topic":"mfa"}}]},{"text":"Both policies are in place."}]}`
	testenv.Start(t, append(f.scripted(t, script), j.Env()...), testenv.Program(t, "worker"))

	p, err := export.Start(t.Context(), export.Settings{Protocol: export.ProtocolGRPC, Endpoint: j.OTLPEndpoint}, "agentrun-e2e-client", operator.Signals(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{Interceptors: p.ClientInterceptors()}
	cdc, err := testenv.SuiteCodec()
	if err != nil {
		t.Fatal(err)
	}
	if cdc != nil {
		cluster.WithCodec(&opts, cdc)
	}
	c, err := client.NewClientFromExisting(srv.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const run = "e2e-trace-continue"
	in := workflows.Input{Messages: agent.UserMessages("Check the VPN and MFA policies."), ContinueAfter: 2}
	_, err = c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: run, TaskQueue: f.queue}, workflows.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	// The client's StartWorkflow span is the root: flush it.
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := c.GetWorkflow(ctx, run, "").Get(ctx, &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	if res.Answer != "Both policies are in place." {
		t.Fatalf("answer %q", res.Answer)
	}

	// Walk the chain of executions back from the newest, counting the
	// activities scheduled and the model calls' tokens.
	executions, activities := 0, 0
	for runID := ""; ; executions++ {
		it := srv.Client.GetWorkflowHistory(t.Context(), run, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var first *historypb.HistoryEvent
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = e
			}
			if e.GetActivityTaskScheduledEventAttributes() != nil {
				activities++
			}
		}
		if runID = first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(); runID == "" {
			executions++
			break
		}
	}
	if executions != 3 {
		t.Fatalf("%d executions, want 3 (continued as new twice)", executions)
	}

	roots := j.WaitSpans(t, "agentrun-e2e-client", 1, time.Minute)
	tr := runTrace(t, j, run, time.Minute, func(tr jaegertest.Trace) bool { return len(stepSpans(tr)) == 5 })
	if len(roots) != 1 || roots[0].TraceID != tr.ID || roots[0].ParentID != "" {
		t.Fatalf("the client's spans %+v; want one, the root of the run's trace %s", roots, tr.ID)
	}
	want := map[string]int{
		"chat scripted llm/1": 1, "chat scripted llm/2": 1, "chat scripted llm/3": 1,
		"execute_tool lookup tool/1/0/lookup": 1, "execute_tool lookup tool/2/0/lookup": 1,
	}
	if got := stepSpans(tr); !maps.Equal(got, want) {
		t.Fatalf("step spans %v, want %v", got, want)
	}
	runIDs := map[string]bool{}
	for _, s := range tr.Spans {
		if strings.HasPrefix(s.Name, "StartActivity:") {
			runIDs[s.Attr("temporalRunID")] = true
			if s.ParentID != roots[0].SpanID {
				t.Errorf("%s of execution %s has parent %s, want the root %s", s.Name, s.Attr("temporalRunID"), s.ParentID, roots[0].SpanID)
			}
		}
	}
	if len(runIDs) != 3 {
		t.Errorf("StartActivity spans from %d executions, want 3", len(runIDs))
	}
	if len(tr.Spans) != 1+2*activities+5 {
		t.Errorf("%d spans in the trace, want %d (the root, 2 per activity for %d activities, 5 steps)", len(tr.Spans), 1+2*activities+5, activities)
	}
	noneTwice(t, tr)
	t.Logf("trace %s: %d spans, %d activities over %d executions", tr.ID, len(tr.Spans), activities, executions)
}
