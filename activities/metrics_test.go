package activities_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/metrics"
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
		Model: &agent.ModelInput{New: agent.UserMessages("I need read access to the orders database.")},
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
