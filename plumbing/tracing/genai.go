package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys: the GenAI semantic conventions' and agentrun's own.
const (
	KeyOperation     = attribute.Key("gen_ai.operation.name")
	KeyProvider      = attribute.Key("gen_ai.provider.name")
	KeyRequestModel  = attribute.Key("gen_ai.request.model")
	KeyResponseModel = attribute.Key("gen_ai.response.model")
	KeyInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	KeyOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	// parts of the input tokens, set when the provider reported them
	KeyCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	KeyCacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	KeyFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	KeyToolName         = attribute.Key("gen_ai.tool.name")
	KeyToolCallID       = attribute.Key("gen_ai.tool.call.id")
	KeyInputMessages    = attribute.Key("gen_ai.input.messages")      // content: opt-in
	KeyOutputMessages   = attribute.Key("gen_ai.output.messages")     // content: opt-in
	KeyToolArguments    = attribute.Key("gen_ai.tool.call.arguments") // content: opt-in
	KeyToolResult       = attribute.Key("gen_ai.tool.call.result")    // content: opt-in
	KeyErrorType        = attribute.Key("error.type")

	KeyRunID         = attribute.Key("agentrun.run_id")
	KeyStep          = attribute.Key("agentrun.step")
	KeyAttempt       = attribute.Key("agentrun.attempt")
	KeyToolKind      = attribute.Key("agentrun.tool.kind")
	KeySettle        = attribute.Key("agentrun.settle")
	KeyGuardDecision = attribute.Key("agentrun.guard.decision")
	// KeyCost is a model step's cost in US dollars, at its model's price.
	KeyCost        = attribute.Key("agentrun.cost")
	KeyWaitKind    = attribute.Key("agentrun.wait.kind")
	KeyWaitOutcome = attribute.Key("agentrun.wait.outcome")
	KeyAnsweredBy  = attribute.Key("agentrun.wait.answered_by")
	KeyMarker      = attribute.Key("agentrun.wait.step")
)

// ContentKeys are the attributes that hold text (prompts, completions, tool
// arguments and results): only with Settings.CaptureContent.
var ContentKeys = []attribute.Key{KeyInputMessages, KeyOutputMessages, KeyToolArguments, KeyToolResult}

// The write guard's decisions (agentrun.guard.decision).
const (
	GuardRan            = "ran"              // the tool ran
	GuardReplayed       = "replayed"         // a recorded result was returned, the tool not run
	GuardSettledByProbe = "settled_by_probe" // an interrupted write settled by its probe
	GuardSettledByKey   = "settled_by_key"   // an interrupted write run again with its key
	GuardIndeterminate  = "indeterminate"    // a person must reconcile it
	GuardFenced         = "fenced"           // an earlier attempt may still run: wait
)

// Provider and model of a model name as agentrun spells it
// ("openai:gpt-4o", "anthropic:claude-...", "scripted", "scripted:PATH"):
// the GenAI provider name and the model.
func ProviderModel(name string) (provider, model string) {
	p, m, ok := strings.Cut(name, ":")
	if !ok || p == "scripted" {
		return p, "scripted"
	}
	return p, m
}

// StartChat starts the span of one model step attempt, "chat {model}",
// under ctx's span; tracer nil: no span (a no-op span).
func StartChat(ctx context.Context, tracer trace.Tracer, model string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	provider, m := ProviderModel(model)
	attrs = append([]attribute.KeyValue{KeyOperation.String("chat"), KeyProvider.String(provider), KeyRequestModel.String(m)}, attrs...)
	return tracer.Start(ctx, "chat "+m, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// StartTool starts the span of one tool step attempt, "execute_tool
// {name}"; tracer nil: no span.
func StartTool(ctx context.Context, tracer trace.Tracer, tool string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	attrs = append([]attribute.KeyValue{KeyOperation.String("execute_tool"), KeyToolName.String(tool)}, attrs...)
	return tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with errType (the error's class, never
// its text: the text may quote a tool's output) when err is not nil.
func End(span trace.Span, err error, errType string) {
	if err != nil {
		if errType == "" {
			errType = "_OTHER"
		}
		span.SetAttributes(KeyErrorType.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}
