package export_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/jaegertest"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
)

// TestHTTPProtobufToJaeger: the standard variables OTEL_EXPORTER_OTLP_PROTOCOL
// =http/protobuf and an endpoint on Jaeger's OTLP/HTTP receiver (its 4318)
// send the spans over OTLP/HTTP, read back from Jaeger's query API.
func TestHTTPProtobufToJaeger(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"general endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": j.OTLPHTTPEndpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": j.OTLPHTTPEndpoint + "/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			service := "agentrun-http-" + strings.ReplaceAll(tc.name, " ", "-")
			tc.env["OTEL_SERVICE_NAME"] = service
			cfg, err := config.Load(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Tracing.Protocol != export.ProtocolHTTP || !cfg.Tracing.On() {
				t.Fatalf("settings %+v, want OTLP/HTTP on", cfg.Tracing)
			}
			p, err := export.Start(t.Context(), cfg.Tracing, export.ServiceWorker, operator.Signals(), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, root := p.Tracer().Start(context.Background(), "invoke_agent http", trace.WithSpanKind(trace.SpanKindServer))
			_, child := p.Tracer().Start(ctx, "chat scripted")
			child.End()
			root.End()
			if err := p.Shutdown(t.Context()); err != nil {
				t.Fatalf("shutdown (the flush over OTLP/HTTP): %v", err)
			}
			spans := j.WaitSpans(t, service, 2, 30*time.Second)
			if len(spans) != 2 || spans[0].Name != "invoke_agent http" || spans[1].Name != "chat scripted" || spans[1].TraceID != root.SpanContext().TraceID().String() {
				t.Fatalf("Jaeger holds %+v, want the two spans of trace %s", spans, root.SpanContext().TraceID())
			}
		})
	}
}
