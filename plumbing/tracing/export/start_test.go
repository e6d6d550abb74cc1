package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	p, err := Start(t.Context(), Settings{Sampler: DefaultSampler, SamplerArg: 1}, ServiceWorker, nil, nil)
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
//
// Not parallel: the error handler is the process's (otel.SetErrorHandler),
// and a parallel test's Start replaced it under this one in CI.
func TestUnreachableBackend(t *testing.T) {
	var buf syncBuffer
	p, err := Start(t.Context(), Settings{Protocol: ProtocolGRPC, Endpoint: "http://127.0.0.1:1", Sampler: DefaultSampler, SamplerArg: 1}, ServiceWorker, nil, slog.New(slog.NewTextHandler(&buf, nil)))
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
	if log := buf.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "tracing: spans not exported") || !strings.Contains(log, "127.0.0.1:1") {
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

// TestExportWarningsOncePerKind: export errors are warnings, one for each
// kind of error (the same text but for its numbers), at most maxWarnKinds
// and one line saying there are more.
func TestExportWarningsOncePerKind(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := warnHandler(slog.New(slog.NewTextHandler(&buf, nil)), "otlp grpc http://collector:4317")
	for i := range 5 {
		h.Handle(fmt.Errorf("dial tcp 10.0.0.%d:4317: connection refused", i))
	}
	h.Handle(errors.New("context deadline exceeded"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "runs go on") || !strings.Contains(lines[0], `exporter="otlp grpc http://collector:4317"`) ||
		!strings.Contains(lines[0], "connection refused") || !strings.Contains(lines[1], "context deadline exceeded") {
		t.Fatalf("log %q: want one warning for each of the two kinds, naming the exporter", lines)
	}
	buf.Reset()
	for i := range 3 * maxWarnKinds {
		h.Handle(fmt.Errorf("kind %c", 'A'+rune(i)))
	}
	if n := strings.Count(buf.String(), "\n"); n != maxWarnKinds-2+1 || !strings.Contains(buf.String(), "more kinds of export errors than are logged") {
		t.Fatalf("%d lines after many kinds: %s; want %d warnings and one that there are more", n, buf.String(), maxWarnKinds-2)
	}
}

// TestFailingExportLogsOnce: an OTLP/HTTP backend that refuses every export
// (a 404: not an OTLP receiver) gets each batch, and the log says so once,
// naming the exporter; the program's spans go on.
//
// Not parallel: the error handler is the process's (otel.SetErrorHandler).
func TestFailingExportLogsOnce(t *testing.T) {
	var mu sync.Mutex
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts++
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	var buf syncBuffer
	p, err := Start(t.Context(), Settings{Exporter: ExporterOTLP, Protocol: ProtocolHTTP, Endpoint: srv.URL + "/v1/traces", Sampler: DefaultSampler, SamplerArg: 1}, ServiceWorker, nil, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Each span is sent by the batch's timer (batchEvery), as in a
	// program: its failure goes to the error handler.
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return posts
	}
	const batches = 3
	for i := range batches {
		_, span := p.Tracer().Start(context.Background(), fmt.Sprintf("chat %d", i))
		span.End()
		deadline := time.Now().Add(10 * batchEvery)
		for count() < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("the backend got %d exports within %s of span %d, want %d", count(), 10*batchEvery, i, i+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Logf("Shutdown: %v", err)
	}
	if n := count(); n != batches {
		t.Errorf("the backend got %d exports, want %d", n, batches)
	}
	log := buf.String()
	if n := strings.Count(log, "tracing: spans not exported"); n != 1 || !strings.Contains(log, "level=WARN") || !strings.Contains(log, "404") || !strings.Contains(log, "otlp http/protobuf "+srv.URL) {
		t.Fatalf("log %q: want one warning naming the exporter and the 404", log)
	}
}

// TestErrorTextOnlyWithCapture: the sdk interceptor's spans record a
// failed step's error type, and its text only with content capture.
func TestErrorTextOnlyWithCapture(t *testing.T) {
	t.Parallel()
	for _, capture := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		span := startSpan(context.Background(), tp.Tracer("test"), "RunActivity:CallTool", capture, nil)
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
