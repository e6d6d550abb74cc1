package tracing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/temporal"
)

// TestOff: without an endpoint Start builds nothing, and the nil Provider
// adds no interceptor and no tracer.
func TestOff(t *testing.T) {
	t.Parallel()
	p, err := Start(t.Context(), Settings{Sampler: DefaultSampler, SamplerArg: 1}, ServiceWorker, nil)
	if err != nil || p != nil {
		t.Fatalf("Start off: %v, %v; want nil, nil", p, err)
	}
	if p.ClientInterceptors() != nil || p.WorkerInterceptors() != nil || p.Tracer() != nil || p.Capture() || p.Shutdown(t.Context()) != nil {
		t.Fatal("the nil Provider adds something")
	}
}

// TestUnreachableBackend: with a backend that does not answer, spans are
// made as usual and the flush at Shutdown ends within its bound, with the
// failed export a warning in the log, never an error of the program.
func TestUnreachableBackend(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	p, err := Start(t.Context(), Settings{Endpoint: "http://127.0.0.1:1", Sampler: DefaultSampler, SamplerArg: 1}, ServiceWorker, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer().Start(context.Background(), "chat scripted")
	span.End()
	start := time.Now()
	if err := p.Shutdown(t.Context()); err != nil {
		t.Logf("Shutdown: %v", err) // the programs log it as a warning
	}
	if d := time.Since(start); d > exportShutdownTimeout+time.Second {
		t.Fatalf("Shutdown took %v, want at most %v", d, exportShutdownTimeout)
	}
	if log := buf.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "tracing: spans not exported; runs go on") || !strings.Contains(log, "127.0.0.1:1") {
		t.Fatalf("log %q: want a warning that the spans were not exported", log)
	}
}

// syncBuffer is a bytes.Buffer safe for the exporter's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExportWarningsRateLimited: export errors are warnings, one a minute
// at most, counting those not logged.
func TestExportWarningsRateLimited(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := warnHandler(slog.New(slog.NewTextHandler(&buf, nil)), "http://collector:4317")
	for range 5 {
		h.Handle(errors.New("connection refused"))
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "runs go on") || !strings.Contains(lines[0], "endpoint=http://collector:4317") {
		t.Fatalf("log %q: want one warning naming the endpoint", lines)
	}
}

// TestErrorTextOnlyWithCapture: the sdk interceptor's spans record a
// failed step's error type, and its text only with content capture.
func TestErrorTextOnlyWithCapture(t *testing.T) {
	t.Parallel()
	for _, capture := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		span := startSpan(context.Background(), tp.Tracer("test"), "RunActivity:CallTool", capture)
		err := temporal.NewApplicationError("ticket store said: SECRET-ROW", "ToolFailed")
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.End()
		s := exp.GetSpans().Snapshots()
		if len(s) != 1 || len(s[0].Events()) != 1 {
			t.Fatalf("capture %v: %d spans", capture, len(s))
		}
		text := fmt.Sprint(s[0].Events()[0].Attributes, s[0].Status().Description)
		if strings.Contains(text, "SECRET-ROW") != capture {
			t.Errorf("capture %v: the span's error says %q", capture, text)
		}
		if !capture && !strings.Contains(text, "ToolFailed") {
			t.Errorf("the span's error %q does not name its type ToolFailed", text)
		}
	}
}

// TestRootWithoutContext: a run started without a trace context gets a
// root derived from its workflow and run ids, the same on every replay and
// different for another run, sampled as the program's sampler decides.
func TestRootWithoutContext(t *testing.T) {
	t.Parallel()
	on := &runTracer{sampler: sdktrace.AlwaysSample()}
	a, b := on.rootParent("hand-1", "run-a"), on.rootParent("hand-1", "run-a")
	if a != b || len(a) != 55 || !strings.HasSuffix(a, "-01") {
		t.Fatalf("roots %q, %q: want one sampled W3C traceparent", a, b)
	}
	if c := on.rootParent("hand-1", "run-b"); c[:35] == a[:35] {
		t.Fatalf("another run's root %q has the same trace id as %q", c, a)
	}
	off := &runTracer{sampler: sdktrace.NeverSample()}
	if r := off.rootParent("hand-1", "run-a"); r[:52] != a[:52] || !strings.HasSuffix(r, "-00") {
		t.Fatalf("root under never-sample %q: want %q not sampled", r, a[:52])
	}
}
