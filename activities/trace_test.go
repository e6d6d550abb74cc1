package activities

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestLogCarriesTraceIDs: a line an activity logs inside a step attempt's
// span carries that span's trace_id and span_id; outside a span, neither.
func TestLogCarriesTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := &Activities{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "chat scripted")
	a.log(ctx).Warn("inside")
	span.End()
	a.log(context.Background()).Warn("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sc := span.SpanContext()
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()) || !strings.Contains(lines[0], "span_id="+sc.SpanID().String()) {
		t.Fatalf("log lines %q: want the first with trace_id=%s span_id=%s", lines, sc.TraceID(), sc.SpanID())
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Fatalf("a line outside a span carries a trace id: %q", lines[1])
	}
}
