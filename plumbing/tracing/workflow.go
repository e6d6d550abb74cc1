package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// tracerKey holds the tracer of agentrun's spans in a workflow's context.
type tracerKey struct{}

// Interceptor is a client and worker interceptor that gives workflow code
// tracer, the tracer of agentrun's spans (Wait); it adds no command.
// Without it in a worker's interceptors, Wait records nothing.
func Interceptor(tracer trace.Tracer) interceptor.Interceptor {
	return &workflowTracer{tracer: tracer}
}

type workflowTracer struct {
	interceptor.InterceptorBase
	tracer trace.Tracer
}

func (w *workflowTracer) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &workflowTracerInbound{tracer: w.tracer}
	i.Next = next
	return i
}

type workflowTracerInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	tracer trace.Tracer
}

func (i *workflowTracerInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	return i.Next.ExecuteWorkflow(workflow.WithValue(ctx, tracerKey{}, i.tracer), in)
}

// The ways a wait for a person is answered (agentrun.wait.answered_by).
const (
	BySignal  = "signal"
	ByUpdate  = "update"
	ByTimeout = "timeout" // an approval timeout, a session's idle timer
)

// Wait records a wait for a person that began at since and is answered
// now, as a span "wait {kind}" (kind: approval, indeterminate, budget,
// session) under the run's root, with its outcome (the operation that
// answered it: approve, deny, reconcile, budget, message, or completed for
// a session that timed out), how it was answered (BySignal, ByUpdate,
// ByTimeout) and the step it was about. Called from workflow code: it
// records nothing while the workflow replays, nor when tracing is off (no
// tracer in ctx), and it adds no command.
func Wait(ctx workflow.Context, kind, outcome, answeredBy, step string, since time.Time) {
	tracer, _ := ctx.Value(tracerKey{}).(trace.Tracer)
	if tracer == nil || workflow.IsReplaying(ctx) {
		return
	}
	root, ok := temporalotel.SpanFromWorkflowContext(ctx)
	if !ok {
		return
	}
	now := workflow.Now(ctx)
	if since.IsZero() || since.After(now) {
		since = now
	}
	attrs := []attribute.KeyValue{
		KeyRunID.String(workflow.GetInfo(ctx).WorkflowExecution.ID),
		KeyWaitKind.String(kind), KeyWaitOutcome.String(outcome), KeyAnsweredBy.String(answeredBy),
	}
	if step != "" {
		attrs = append(attrs, KeyMarker.String(step))
	}
	_, span := tracer.Start(trace.ContextWithSpan(context.Background(), root), "wait "+kind,
		trace.WithTimestamp(since), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(now))
}
