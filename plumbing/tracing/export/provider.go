package export

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/plumbing/tracing"
)

// Settings are the tracing settings of a program (config.Config's
// Tracing), from OpenTelemetry's standard variables. The zero value is off.
type Settings struct {
	// Exporter is where spans go (OTEL_TRACES_EXPORTER): "otlp" or
	// "console" (JSON on standard output). Default "": otlp when Endpoint
	// is set, else tracing off ("none" is off too).
	Exporter string
	// Protocol is the OTLP transport, "grpc" or "http/protobuf"
	// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
	// OTEL_EXPORTER_OTLP_PROTOCOL). Default "": http/protobuf, the
	// specification's default.
	Protocol string
	// Endpoint is the URL the OTLP exporter sends to: for grpc
	// http://HOST:PORT (plain) or https://HOST:PORT (TLS); for
	// http/protobuf the full URL, e.g. http://HOST:4318/v1/traces
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
	// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended for
	// http/protobuf). Default "": with Exporter otlp, the exporter's own
	// default (localhost:4317, or localhost:4318/v1/traces); without,
	// tracing off.
	Endpoint string
	// ServiceName is the service.name of the spans (OTEL_SERVICE_NAME).
	// Default "": the program's own, agentrun-worker, agentrun-starter or
	// agentrun-reconcile.
	ServiceName string
	// Sampler is one of Samplers (OTEL_TRACES_SAMPLER). Default
	// parentbased_always_on.
	Sampler string
	// SamplerArg is the ratio of traceidratio and parentbased_traceidratio,
	// 0 to 1 (OTEL_TRACES_SAMPLER_ARG). Default 1.
	SamplerArg float64
	// CaptureContent records prompt, completion, tool argument and tool
	// result text on the spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true). Default
	// false; never with the payload codec on.
	CaptureContent bool
}

// On reports whether tracing is on: an exporter is named or an endpoint
// set.
func (s Settings) On() bool { return s.Exporter != "" || s.Endpoint != "" }

// The valid Exporter and Protocol values.
const (
	ExporterOTLP    = "otlp"
	ExporterConsole = "console"
	ExporterNone    = "none" // OTEL_TRACES_EXPORTER's value for off
	ProtocolGRPC    = "grpc"
	ProtocolHTTP    = "http/protobuf"
)

// Samplers are the valid OTEL_TRACES_SAMPLER values.
var Samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// DefaultSampler is the sampler when OTEL_TRACES_SAMPLER is unset.
const DefaultSampler = "parentbased_always_on"

// The programs' default service names.
const (
	ServiceWorker    = "agentrun-worker"
	ServiceStarter   = "agentrun-starter"
	ServiceReconcile = "agentrun-reconcile"
)

// CheckEndpoint says what is wrong with an OTLP endpoint of protocol
// (ProtocolGRPC or ProtocolHTTP), or nil: grpc takes no path, http/protobuf
// may have one.
func CheckEndpoint(v, protocol string) error {
	u, err := url.Parse(v)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q", u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return errors.New("no host and port")
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("port %q", u.Port())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("a query (OTLP takes none)")
	}
	if protocol != ProtocolHTTP && strings.Trim(u.Path, "/") != "" {
		return errors.New("a path (OTLP/gRPC takes none)")
	}
	return nil
}

// Sampler is the sampler s names.
func (s Settings) sampler() sdktrace.Sampler {
	ratio := s.SamplerArg
	switch s.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Provider is a program's tracing: its tracer provider, the tracer of
// agentrun's own spans and the sdk's tracing interceptor. A nil *Provider
// is tracing off: no interceptor, no tracer, nothing exported.
type Provider struct {
	wf      interceptor.Interceptor
	tp      trace.TracerProvider
	sdk     *sdktrace.TracerProvider // nil when the caller owns tp
	sampler sdktrace.Sampler
	tracer  trace.Tracer
	ic      interceptor.Interceptor
	capture bool
}

// Signals are the names of the signals and updates whose sends are traced
// (the operator's: operator.Signals()); the sends of any other name, such
// as a stream's polls, stand for their parent.
type Signals []string

// batchEvery is how often the batch of ended spans is sent (OpenTelemetry's
// default is 5s): a worker that is killed loses the spans of at most the
// last second, not the last five.
const batchEvery = time.Second

// exportShutdownTimeout bounds the flush at Shutdown: a backend that does
// not answer costs a stopping program at most this.
const exportShutdownTimeout = 5 * time.Second

// Start builds the tracing of a program named service (its default
// service name) from s: nil when s is off. The exporter connects lazily:
// an unreachable backend is logged as a warning when an export fails.
func Start(ctx context.Context, s Settings, service string, signals Signals, logger *slog.Logger) (*Provider, error) {
	if !s.On() {
		return nil, nil
	}
	exp, err := exporter(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("tracing exporter %s: %w", s.describe(), err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(firstOf(s.ServiceName, service))))
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	sampler := s.sampler()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(batchEvery)), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
	otel.SetErrorHandler(warnHandler(logger, s.describe()))
	p, err := newProvider(tp, sampler, s.CaptureContent, signals)
	if err != nil {
		return nil, err
	}
	p.sdk = tp
	return p, nil
}

// exporter builds the span exporter s names. The OTLP exporters read the
// rest of OpenTelemetry's variables themselves (OTEL_EXPORTER_OTLP_HEADERS,
// _CERTIFICATE, _TIMEOUT, _COMPRESSION and their _TRACES_ forms). Retries
// are off: a failed export is reported at once (and logged once, see
// warnHandler) rather than holding the batch for a minute of retries.
func exporter(ctx context.Context, s Settings) (sdktrace.SpanExporter, error) {
	switch {
	case s.Exporter == ExporterConsole:
		return stdouttrace.New()
	case s.Protocol == ProtocolGRPC:
		opts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
		if s.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		opts := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
		if s.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(s.Endpoint))
		}
		return otlptracehttp.New(ctx, opts...)
	}
}

// describe names where s sends spans, for errors and the log: "console",
// or "otlp PROTOCOL ENDPOINT".
func (s Settings) describe() string {
	if s.Exporter == ExporterConsole {
		return ExporterConsole
	}
	return strings.TrimSpace(fmt.Sprintf("otlp %s %s", firstOf(s.Protocol, ProtocolHTTP), firstOf(s.Endpoint, "(the exporter's default endpoint)")))
}

// New is tracing through tp (tests: an sdk provider with tracetest's
// in-memory exporter). sampler decides the root of a run started without
// a trace context; nil: always sampled.
func New(tp trace.TracerProvider, sampler sdktrace.Sampler, capture bool, signals Signals) (*Provider, error) {
	return newProvider(tp, sampler, capture, signals)
}

func newProvider(tp trace.TracerProvider, sampler sdktrace.Sampler, capture bool, signals Signals) (*Provider, error) {
	if sampler == nil {
		sampler = sdktrace.AlwaysSample()
	}
	p := &Provider{tp: tp, sampler: sampler, tracer: tp.Tracer(TracerName), capture: capture}
	inner, err := temporalotel.NewTracer(temporalotel.TracerOptions{
		Tracer:              tp.Tracer("temporal-sdk-go"),
		DisableQueryTracing: true,
		SpanStarter: func(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
			return startSpan(ctx, t, name, capture, signals, opts...)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("tracing interceptor: %w", err)
	}
	p.ic = interceptor.NewTracingInterceptor(&runTracer{Tracer: inner, sampler: sampler})
	p.wf = tracing.Interceptor(p.tracer)
	return p, nil
}

// TracerName is the instrumentation scope of agentrun's own spans.
const TracerName = "github.com/agentrun/agentrun"

// Tracer is the tracer of agentrun's spans; nil when p is off.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Capture reports whether spans may carry prompt and completion text.
func (p *Provider) Capture() bool { return p != nil && p.capture }

// ClientInterceptors are the client interceptors of p (the sdk's tracing
// interceptor, and the one that gives workflow code the tracer), which the
// workers built from the client use too: none when off.
func (p *Provider) ClientInterceptors() []interceptor.ClientInterceptor {
	if p == nil {
		return nil
	}
	return []interceptor.ClientInterceptor{p.ic, p.wf}
}

// WorkerInterceptors are the worker interceptors of p (a replayer's, a
// test environment's): none when off.
func (p *Provider) WorkerInterceptors() []interceptor.WorkerInterceptor {
	if p == nil {
		return nil
	}
	return []interceptor.WorkerInterceptor{p.ic, p.wf}
}

// Shutdown flushes the spans still queued and stops the exporter, within
// a few seconds. Nil when p is off or the caller owns the provider.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exportShutdownTimeout)
	defer cancel()
	return p.sdk.Shutdown(ctx)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxWarnKinds bounds the kinds of export failure warnHandler logs: a
// backend that fails in ever new ways costs at most this many lines.
const maxWarnKinds = 16

// warnHandler logs OpenTelemetry's errors (a failed export) as warnings,
// once per kind of error: the first of each kind, its text with the
// numbers taken out (ports, counts, durations), and none after
// maxWarnKinds kinds. A backend that stays down costs one line, not one
// per batch.
func warnHandler(logger *slog.Logger, exporter string) otel.ErrorHandler {
	if logger == nil {
		logger = slog.Default()
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	return otel.ErrorHandlerFunc(func(err error) {
		kind := digits.ReplaceAllString(err.Error(), "#")
		mu.Lock()
		defer mu.Unlock()
		if seen[kind] || len(seen) > maxWarnKinds {
			return
		}
		seen[kind] = true
		if len(seen) > maxWarnKinds {
			logger.Warn("tracing: more kinds of export errors than are logged; runs go on", "exporter", exporter, "kinds", maxWarnKinds)
			return
		}
		logger.Warn("tracing: spans not exported (said once for each kind of error); runs go on", "exporter", exporter, "error", err)
	})
}

var digits = regexp.MustCompile(`[0-9]+`)

// The operations of the sdk interceptor's spans this package changes.
const (
	opRunWorkflow = "RunWorkflow"
)

// startSpan starts the sdk interceptor's spans (its SpanStarter): the
// RunWorkflow span and the plumbing's spans are not recorded (doc.go);
// they stand for their parent. Without content capture, the errors its
// spans record keep their type, not their text (quietSpan).
func startSpan(ctx context.Context, t trace.Tracer, name string, capture bool, signals Signals, opts ...trace.SpanStartOption) trace.Span {
	if !keep(name, signals) {
		return trace.SpanFromContext(ctx) // the parent, non-recording; End does nothing
	}
	_, span := t.Start(ctx, name, opts...)
	if capture {
		return span
	}
	return quietSpan{span}
}

// quietSpan is a span that records an error's type, never its text: a
// step's failure may quote a tool's output or the model's words, which
// only content capture (never with the codec on) lets into a trace.
type quietSpan struct{ trace.Span }

func (s quietSpan) RecordError(err error, _ ...trace.EventOption) {
	if err == nil {
		return
	}
	s.Span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", errorClass(err))))
}

func (s quietSpan) SetStatus(code codes.Code, _ string) { s.Span.SetStatus(code, "") }

// errorClass is the class of err: a Temporal application error's type, or
// the Go type of err.
func errorClass(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() != "" {
		return appErr.Type()
	}
	return fmt.Sprintf("%T", err)
}

// keep reports whether the sdk interceptor's span named "Operation:Name"
// is recorded.
func keep(name string, signals Signals) bool {
	op, what, _ := strings.Cut(name, ":")
	switch op {
	case opRunWorkflow, "ValidateUpdate", "HandleQuery", "QueryWorkflow":
		return false
	case "HandleSignal", "HandleUpdate":
		// Not in the run's trace (their parent is the sender's span, or
		// none), and sdk v1.51's HandleUpdate is recorded on replay too:
		// the workflow's wait spans say who answered instead.
		return false
	case "SignalWorkflow", "UpdateWorkflow":
		return slices.Contains(signals, what)
	}
	return true
}

// runTracer is the sdk's OpenTelemetry tracer, with a deterministic root
// for a run started without a trace context (doc.go).
type runTracer struct {
	interceptor.Tracer
	sampler sdktrace.Sampler
}

// The sdk interceptor's tags on a workflow's spans.
const (
	tagWorkflowID = "temporalWorkflowID"
	tagRunID      = "temporalRunID"
)

func (t *runTracer) StartSpan(opts *interceptor.TracerStartSpanOptions) (interceptor.TracerSpan, error) {
	if opts.Operation == opRunWorkflow && opts.Parent == nil {
		ref, err := t.UnmarshalSpan(map[string]string{"traceparent": t.rootParent(opts.Tags[tagWorkflowID], opts.Tags[tagRunID])})
		if err != nil {
			return nil, err
		}
		opts.Parent = ref
	}
	return t.Tracer.StartSpan(opts)
}

// rootParent is the W3C traceparent of the root of a run started without a
// trace context: ids from a hash of its workflow id and first run id,
// sampled as the program's sampler decides for that trace id.
func (t *runTracer) rootParent(workflowID, runID string) string {
	sum := sha256.Sum256([]byte("agentrun\x00" + workflowID + "\x00" + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	flags := "00"
	if t.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: tid, Name: "AgentRun", Kind: trace.SpanKindServer}).Decision == sdktrace.RecordAndSample {
		flags = "01"
	}
	return "00-" + tid.String() + "-" + sid.String() + "-" + flags
}

// ValidSampler reports whether name is one of Samplers.
func ValidSampler(name string) bool { return slices.Contains(Samplers, name) }
