package agentrun_test

import (
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
)

// actsRecorder is a worker.Registry that keeps the activities Register
// puts on it and counts what it registers.
type actsRecorder struct {
	worker.Registry // nil: Register calls only the methods below
	acts            *activities.Activities
	workflows, bare int
}

func (r *actsRecorder) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) { r.workflows++ }

func (r *actsRecorder) RegisterActivityWithOptions(a any, _ activity.RegisterOptions) {
	r.acts = a.(*activities.Activities)
}

func (r *actsRecorder) RegisterActivity(any) { r.bare++ }

// TestRegisterObservability: Config's Metrics, Tracer, CaptureContent and
// NoStream reach the activities Register registers; a team's Register
// registers no bare (legacy) activity name.
func TestRegisterObservability(t *testing.T) {
	t.Parallel()
	rec, err := metrics.NewRecorder(noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	tracer := tracenoop.NewTracerProvider().Tracer("test")
	var r actsRecorder
	err = agentrun.Register(&r, agentrun.Config{
		Agents:  []agentrun.Agent{{Name: "a", Model: llm.NewScripted(llm.Script{})}},
		Journal: t.TempDir(),
		Metrics: rec, Tracer: tracer, CaptureContent: true, NoStream: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := r.acts
	if r.workflows != 1 || r.bare != 0 || a == nil {
		t.Fatalf("registered %d workflows, %d bare activity sets, activities %v; want 1, 0, some", r.workflows, r.bare, a)
	}
	if a.Metrics != rec || a.Tracer != tracer || !a.Capture || !a.NoStream {
		t.Errorf("activities: Metrics %p, Tracer %v, Capture %t, NoStream %t; want the Config's", a.Metrics, a.Tracer, a.Capture, a.NoStream)
	}
}
