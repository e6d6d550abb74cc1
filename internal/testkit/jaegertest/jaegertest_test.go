package jaegertest

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestReadBack sends two traces over OTLP/gRPC with the OpenTelemetry
// SDK, as the programs do, and reads them back through the query API:
// names, ids, parent links, a link, attributes of each type, an event,
// the resource, timing.
func TestReadBack(t *testing.T) {
	j := Start(t)
	if !strings.HasPrefix(j.OTLPEndpoint, "http://127.0.0.1:") || !strings.HasPrefix(j.QueryURL, "http://127.0.0.1:") {
		t.Fatalf("endpoints not on loopback: %s, %s", j.OTLPEndpoint, j.QueryURL)
	}
	ctx := t.Context()
	const service = "jaegertest-selftest"
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(j.OTLPEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", service), attribute.String("host.name", "selftest-host"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	tracer := tp.Tracer("agentrun/jaegertest")

	begin := time.Now()
	rootCtx, root := tracer.Start(ctx, "invoke_agent hand", trace.WithSpanKind(trace.SpanKindServer))
	_, chat := tracer.Start(rootCtx, "chat scripted-model", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.Int64("gen_ai.usage.input_tokens", 1234),
		attribute.Bool("agentrun.replayed", false),
		attribute.Float64("agentrun.ratio", 0.25),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}),
	))
	time.Sleep(5 * time.Millisecond)
	chat.End()
	_, wait := tracer.Start(rootCtx, "await approval", trace.WithLinks(trace.Link{SpanContext: chat.SpanContext()}))
	wait.AddEvent("approved", trace.WithAttributes(attribute.String("agentrun.answered_by", "signal")))
	wait.SetStatus(codes.Error, "rejected")
	wait.End()
	root.End()
	_, other := tracer.Start(ctx, "another trace")
	other.End()
	end := time.Now()
	if err := tp.Shutdown(ctx); err != nil { // flushes
		t.Fatal(err)
	}

	id := root.SpanContext().TraceID().String()
	tr := j.WaitTrace(t, id, 3, 30*time.Second)
	if tr.ID != id || len(tr.Spans) != 3 {
		t.Fatalf("trace %s: got id %s with %d spans, want 3: %+v", id, tr.ID, len(tr.Spans), tr.Spans)
	}
	rootID, chatID := root.SpanContext().SpanID().String(), chat.SpanContext().SpanID().String()
	want := []struct{ name, spanID, parent string }{
		{"invoke_agent hand", rootID, ""},
		{"chat scripted-model", chatID, rootID},
		{"await approval", wait.SpanContext().SpanID().String(), rootID},
	}
	for i, w := range want { // by start time
		s := tr.Spans[i]
		if s.Name != w.name || s.SpanID != w.spanID || s.ParentID != w.parent || s.TraceID != id || s.Service != service {
			t.Errorf("span %d: got %q id %s parent %q trace %s service %q, want %q id %s parent %q trace %s service %q",
				i, s.Name, s.SpanID, s.ParentID, s.TraceID, s.Service, w.name, w.spanID, w.parent, id, service)
		}
		if s.Start.Before(begin.Truncate(time.Microsecond)) || s.Start.Add(s.Duration).After(end.Add(time.Microsecond)) {
			t.Errorf("span %s: %s + %s is outside the test's %s .. %s", s.Name, s.Start, s.Duration, begin, end)
		}
		if s.Resource["host.name"] != "selftest-host" {
			t.Errorf("span %s: resource %v, want host.name selftest-host", s.Name, s.Resource)
		}
	}
	if got := tr.Children(rootID); len(got) != 2 {
		t.Errorf("root has %d children, want 2", len(got))
	}

	c := tr.Named("chat scripted-model")[0]
	for key, want := range map[string]any{
		"gen_ai.operation.name":          "chat",
		"gen_ai.usage.input_tokens":      int64(1234),
		"agentrun.replayed":              false,
		"agentrun.ratio":                 0.25,
		"gen_ai.response.finish_reasons": `["stop"]`,
		"span.kind":                      "client",
		"otel.scope.name":                "agentrun/jaegertest",
	} {
		if got := c.Attrs[key]; got != want {
			t.Errorf("chat span: %s = %#v, want %#v (all: %v)", key, got, want, c.Attrs)
		}
	}
	if c.Attr("gen_ai.usage.input_tokens") != "1234" || c.Attr("absent") != "" {
		t.Errorf("Attr: %q, %q", c.Attr("gen_ai.usage.input_tokens"), c.Attr("absent"))
	}
	if c.Duration < 5*time.Millisecond {
		t.Errorf("chat span lasted %s, want at least the 5ms it slept", c.Duration)
	}

	w := tr.Named("await approval")[0]
	if len(w.Events) != 1 || w.Events[0].Name != "approved" || w.Events[0].Attrs["agentrun.answered_by"] != "signal" {
		t.Errorf("wait span: events %+v, want one approved with agentrun.answered_by=signal", w.Events)
	}
	if w.Attrs["otel.status_code"] != "ERROR" || w.Attrs["otel.status_description"] != "rejected" || w.Attrs["error"] != true {
		t.Errorf("wait span: status tags %v, want otel.status_code ERROR, otel.status_description rejected, error true", w.Attrs)
	}
	if _, ok := c.Attrs["otel.status_code"]; ok {
		t.Errorf("chat span: otel.status_code %v without a status", c.Attrs["otel.status_code"])
	}
	if len(w.Links) != 1 || w.Links[0].SpanID != chatID || w.Links[0].TraceID != id || w.Links[0].Type != "FOLLOWS_FROM" {
		t.Errorf("wait span: links %+v, want one FOLLOWS_FROM to %s", w.Links, chatID)
	}

	spans := j.WaitSpans(t, service, 4, 30*time.Second)
	if len(spans) != 4 {
		t.Fatalf("WaitSpans: %d spans of %s, want 4", len(spans), service)
	}
	traces, err := j.Traces(ctx, service)
	if err != nil || len(traces) != 2 {
		t.Fatalf("Traces: %d traces, %v; want 2", len(traces), err)
	}
	services, err := j.Services(ctx)
	if err != nil || len(services) != 1 || services[0] != service {
		t.Fatalf("Services: %v, %v; want [%s]", services, err, service)
	}
	if _, err := j.Trace(ctx, strings.Repeat("ab", 16)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Trace of an unknown id: %v, want ErrNotFound", err)
	}
	if env := j.Env(); len(env) != 2 || env[0] != "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPEndpoint || env[1] != "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" {
		t.Errorf("Env: %v", env)
	}
}

// TestStop: Stop ends the process and frees its ports.
func TestStop(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		Start(t) // fails under CI, skips elsewhere
	}
	j, err := Run(t.Context(), bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Stop(); err != nil {
		t.Fatal(err)
	}
	if st := j.cmd.ProcessState; st == nil || !st.Success() {
		t.Fatalf("Jaeger's exit on SIGTERM: %v, want status 0 (it shuts down in order)", st)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, err := j.Services(ctx); err == nil {
		t.Fatal("the query API still answers after Stop")
	}
	if err := j.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

// TestPortTaken: a start that finds a port taken is tried again on new
// ports.
func TestPortTaken(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		Start(t) // fails under CI, skips elsewhere
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	picks := 0
	pickPorts = func(n int) ([]string, error) {
		picks++
		ports, err := freePorts(n)
		if picks == 1 && err == nil {
			ports[2] = strconv.Itoa(taken.Addr().(*net.TCPAddr).Port) // the query API's
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	dir := t.TempDir()
	j, err := Run(t.Context(), bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	if picks != 2 || filepath.Base(j.Log) != "jaeger-2.log" {
		t.Fatalf("%d picks of ports, log %s; want 2, jaeger-2.log", picks, j.Log)
	}
	if first := tail(filepath.Join(dir, "jaeger-1.log"), 2000); !strings.Contains(first, "address already in use") {
		t.Fatalf("the first start's log does not say the port was in use: %s", first)
	}
	if _, err := j.Services(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestBinaryMissing: a missing program is an error that says what to run.
func TestBinaryMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "jaeger")
	t.Setenv(EnvBinary, missing)
	_, err := Binary()
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), EnvBinary) {
		t.Fatalf("Binary with %s=%s: %v", EnvBinary, missing, err)
	}
}
