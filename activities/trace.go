package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/tracing"
)

// stepAttrs are the attributes every step attempt's span carries.
func stepAttrs(ctx context.Context, step string) []attribute.KeyValue {
	info := activity.GetInfo(ctx)
	return []attribute.KeyValue{
		tracing.KeyRunID.String(info.WorkflowExecution.ID),
		tracing.KeyStep.String(step),
		tracing.KeyAttempt.Int(int(info.Attempt)),
	}
}

// startChat starts the span of a model step attempt (package
// plumbing/tracing: "chat {model}"); a no-op span without a Tracer.
func (a *Activities) startChat(ctx context.Context, in StepInput) (context.Context, trace.Span) {
	if a.Tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	ctx, span := tracing.StartChat(ctx, a.Tracer, a.Exec.Model.Name(), stepAttrs(ctx, in.Step.Name)...)
	if a.Capture {
		if b, err := json.Marshal(in.Step.Model.New); err == nil {
			span.SetAttributes(tracing.KeyInputMessages.String(string(b)))
		}
	}
	return ctx, span
}

// endChat ends a model step attempt's span with what the reply says: the
// model that answered, its tokens and why it stopped.
func (a *Activities) endChat(span trace.Span, res json.RawMessage, err error) {
	if !span.IsRecording() {
		return
	}
	if err == nil {
		if reply, derr := agent.DecodeModelReply(res); derr == nil {
			_, model := tracing.ProviderModel(reply.Model)
			attrs := []attribute.KeyValue{
				tracing.KeyInputTokens.Int64(reply.Usage.InputTokens),
				tracing.KeyOutputTokens.Int64(reply.Usage.OutputTokens),
			}
			if n := reply.Usage.CacheReadTokens; n > 0 {
				attrs = append(attrs, tracing.KeyCacheReadTokens.Int64(n))
			}
			if n := reply.Usage.CacheWriteTokens; n > 0 {
				attrs = append(attrs, tracing.KeyCacheWriteTokens.Int64(n))
			}
			if reply.Model != "" {
				attrs = append(attrs, tracing.KeyResponseModel.String(model))
			}
			if reply.Usage.Cost > 0 {
				attrs = append(attrs, tracing.KeyCost.Float64(reply.Usage.Cost))
			}
			if reply.FinishReason != "" {
				attrs = append(attrs, tracing.KeyFinishReasons.StringSlice([]string{reply.FinishReason}))
			}
			if a.Capture {
				if b, err := json.Marshal(reply.Message); err == nil {
					attrs = append(attrs, tracing.KeyOutputMessages.String(string(b)))
				}
			}
			span.SetAttributes(attrs...)
		}
	}
	tracing.End(span, err, errType(err))
}

// settleMode names how a write settles when interrupted: key, probe or
// none (agentrun.settle).
func settleMode(s *agent.Settle) string {
	switch {
	case s == nil:
		return "none"
	case s.KeyArg != "":
		return "key"
	case s.Probe != nil:
		return "probe"
	}
	return "none"
}

// startTool starts the span of a tool step attempt ("execute_tool
// {name}"); a no-op span without a Tracer.
func (a *Activities) startTool(ctx context.Context, in StepInput) (context.Context, trace.Span) {
	if a.Tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	attrs := append(stepAttrs(ctx, in.Step.Name),
		tracing.KeyToolKind.String(string(in.Step.Kind)),
		tracing.KeySettle.String(settleMode(in.Step.Settle)),
		tracing.KeyToolCallID.String(in.Step.Call.ID))
	return tracing.StartTool(ctx, a.Tracer, in.Step.Call.Name, attrs...)
}

// endTool ends a tool step attempt's span, with the guard's decision for
// a guarded write ("" for other steps).
func (a *Activities) endTool(span trace.Span, res json.RawMessage, err error, decision string) {
	if !span.IsRecording() {
		return
	}
	if decision != "" {
		span.SetAttributes(tracing.KeyGuardDecision.String(decision))
	}
	if a.Capture && err == nil {
		if r, derr := agent.DecodeToolResult(res); derr == nil && r.ContentRef == nil {
			span.SetAttributes(tracing.KeyToolResult.String(r.Content))
		}
	}
	tracing.End(span, err, errType(err))
}

// guardDecision is what the write guard did in an attempt: ran is whether
// the tool was called.
func guardDecision(res json.RawMessage, err error, ran bool) string {
	var appErr *temporal.ApplicationError
	switch {
	case err != nil && errors.As(err, &appErr) && appErr.Type() == ErrTypeIndeterminate:
		return tracing.GuardIndeterminate
	case err != nil && errors.As(err, &appErr) && appErr.Type() == ErrTypeFenced:
		return tracing.GuardFenced
	case err == nil:
		if s := agent.SettledOf(res); s != nil {
			if s.By == agent.SettledByKey {
				return tracing.GuardSettledByKey
			}
			return tracing.GuardSettledByProbe
		}
		if !ran {
			return tracing.GuardReplayed
		}
	}
	if ran {
		return tracing.GuardRan
	}
	return ""
}

// errType is the class of a step's error: its application error type.
func errType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

// log is the activities' logger for ctx: with trace_id and span_id when
// ctx holds a span.
func (a *Activities) log(ctx context.Context) *slog.Logger {
	l := a.logger()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		l = l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	}
	return l
}
