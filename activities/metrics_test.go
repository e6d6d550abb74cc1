package activities_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/tools"
)

// TestStepMetrics: each step attempt is counted by kind and outcome, a
// write that ends Indeterminate counts as such, a gated write counts as
// approved, a model step counts its tokens and the denials by a person it
// tells the model of.
func TestStepMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	rec, err := metrics.NewRecorder(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	acts, _ := slowDemo(t, 2*time.Second, 100*time.Millisecond)
	acts.Metrics = rec
	var suite testsuite.WorkflowTestSuite
	run := func(fn any, in any) {
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		_, _ = env.ExecuteActivity(fn, in)
	}
	run(acts.CallModel, modelStep())
	denied := modelStep()
	denied.Step.Name = agent.ModelStep(2)
	denied.Step.Model.New = []agent.Message{
		{Role: agent.RoleTool, Step: "tool/1/0/create_ticket", IsError: true, Content: agent.DeniedByOperator + "not during the freeze"},
		{Role: agent.RoleTool, Step: "tool/1/1/lookup", IsError: true, Content: "denied: the policy denies lookup"}, // the policy's, not a person's
	}
	run(acts.CallModel, denied)
	run(acts.CallTool, toolStep("lookup", agent.KindRead, `{"topic":"vpn"}`))       // times out: an error result, completed
	run(acts.CallTool, toolStep("no_such_tool", agent.KindRead, `{}`))              // fails
	run(acts.CallTool, toolStep("create_ticket", agent.KindWrite, `{"title":"t"}`)) // times out: Indeterminate
	retry := toolStep("create_ticket", agent.KindWrite, `{"title":"t"}`)
	retry.Step.Name, retry.Generation = "tool/1/1/create_ticket", 2 // a reconcile retry: no new approval
	run(acts.CallTool, retry)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name  string
		attrs []attribute.KeyValue
		value int64
	}{
		{"agentrun.steps", kv("kind", "model", "outcome", "completed"), 2},
		{"agentrun.steps", kv("kind", "read", "outcome", "completed"), 1},
		{"agentrun.steps", kv("kind", "read", "outcome", "failed"), 1},
		{"agentrun.steps", kv("kind", "write", "outcome", "indeterminate"), 2},
		{"agentrun.writes.indeterminate", nil, 2},
		{"agentrun.approvals", kv("decision", "approve"), 1},
		{"agentrun.approvals", kv("decision", "deny"), 1},
	} {
		if got := counter(rm, want.name, want.attrs); got != want.value {
			t.Errorf("%s%v = %d, want %d", want.name, want.attrs, got, want.value)
		}
	}
	if got := counter(rm, "agentrun.tokens", kv("model", "scripted", "direction", "input")); got <= 0 {
		t.Errorf("input tokens %d, want > 0", got)
	}
}

func modelStep() activities.StepInput {
	return activities.StepInput{Step: agent.Step{
		Name: agent.ModelStep(1), Kind: agent.KindModel,
		Model: &agent.ModelInput{New: agent.UserMessages(hand.Prompt)},
	}}
}

func kv(pairs ...string) []attribute.KeyValue {
	var out []attribute.KeyValue
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, attribute.String(pairs[i], pairs[i+1]))
	}
	return out
}

// counter is the value of the int64 sum name whose attributes are exactly
// attrs.
func counter(rm metricdata.ResourceMetrics, name string, attrs []attribute.KeyValue) int64 {
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				if dp.Attributes.Equals(&want) {
					return dp.Value
				}
			}
		}
	}
	return 0
}

// TestSettledMetrics: a keyed, probed write that timed out is settled by
// its probe on the next attempt, which counts it by how and with what
// answer; the ticket exists once.
func TestSettledMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	rec, err := metrics.NewRecorder(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	acts, tickets := slowDemo(t, 2*time.Second, 100*time.Millisecond)
	acts.Metrics = rec
	acts.Guard.Probe = acts.Exec.Probe
	probe := &agent.Probe{Tool: "find_ticket", Args: json.RawMessage(`{"request_id":"{{key}}"}`), Found: `^(TICKET-[0-9]+):`, NotFound: `^no ticket`}
	// The worker's create_ticket declares the key and the probe the step
	// settles by (the worker refuses a step that declares what its tool
	// does not).
	var own []tools.Tool
	for _, tool := range tools.Demo(tools.DemoConfig{Tickets: tickets, Delay: 2 * time.Second}) {
		o := tools.Override{Timeout: 100 * time.Millisecond}
		if tool.Spec().Name == "create_ticket" {
			key := "request_id"
			o.IdempotencyKey, o.Probe = &key, probe
		}
		own = append(own, tools.Apply(tool, o))
	}
	set, err := tools.NewSet(own...)
	if err != nil {
		t.Fatal(err)
	}
	acts.Exec.Tools = set
	in := toolStep("create_ticket", agent.KindWrite, `{"title":"t"}`)
	in.Step.Settle = &agent.Settle{KeyArg: "request_id", Key: "agentrun-k", Probe: probe}
	var suite testsuite.WorkflowTestSuite
	call := func() (string, error) {
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		v, err := env.ExecuteActivity(acts.CallTool, in)
		if err != nil {
			return "", err
		}
		var res json.RawMessage
		if err := v.Get(&res); err != nil {
			t.Fatal(err)
		}
		return string(res), nil
	}
	if _, err := call(); err == nil || !strings.Contains(err.Error(), "deadline passed") {
		t.Fatalf("first attempt: %v, want the attempt's deadline (the tool's timeout) passed", err)
	}
	time.Sleep(fence.Grace) // the first attempt holds the write until its deadline plus the grace
	res, err := call()
	if err != nil || !strings.Contains(res, `"content":"TICKET-1"`) || !strings.Contains(res, `"by":"probe"`) {
		t.Fatalf("second attempt: %s, %v; want TICKET-1 settled by the probe", res, err)
	}
	ts, err := tools.ReadTickets(tickets)
	if err != nil || len(ts) != 1 || ts[0].RequestID != "agentrun-k" {
		t.Fatalf("tickets %+v, %v; want one, under the key", ts, err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	if got := counter(rm, "agentrun.writes.settled", kv("by", "probe", "answer", "found")); got != 1 {
		t.Errorf("settled{probe, found} = %d, want 1", got)
	}
	if got := counter(rm, "agentrun.writes.indeterminate", nil); got != 0 {
		t.Errorf("indeterminate = %d, want 0", got)
	}
}
