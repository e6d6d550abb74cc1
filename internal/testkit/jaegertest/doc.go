// Package jaegertest gives tests a real tracing backend: Jaeger's
// all-in-one program (bin/jaeger, built by make jaeger from the pinned
// module build/jaeger), started on free 127.0.0.1 ports with its traces in
// memory, and read back through Jaeger's query API.
//
// [Start] starts one for a test and stops it at the test's cleanup; [Run]
// starts one for a program that is not a test (the bench), stopped with
// [Jaeger.Stop]. The program is $AGENTRUN_JAEGER, or bin/jaeger at the
// module root. When it is missing or does not start, the test fails under
// CI=true and is skipped otherwise, saying to run make jaeger.
//
// Jaeger runs with config.yaml (embedded here): the OTLP receivers, gRPC
// ([Jaeger.OTLPEndpoint], what OTEL_EXPORTER_OTLP_ENDPOINT names with the
// gRPC exporter; [Jaeger.Env]) and HTTP ([Jaeger.OTLPHTTPEndpoint]), write
// straight (no batching) into the in-memory store that the query API
// ([Jaeger.QueryURL], /api/...) reads. Start returns once the query API
// answers and both receivers accept connections.
//
// The readers ([Jaeger.Services], [Jaeger.Traces], [Jaeger.Trace]) ask for
// raw traces (raw=true): the spans as stored, without the query service's
// adjusters, one of which drops a span identical to another, so that a test
// counting spans sees every one that arrived. A [Span] carries the OTLP
// span's fields as Jaeger's model keeps them: the operation name, the ids
// (hex, as OpenTelemetry prints them), the parent (the CHILD_OF reference),
// other references as links, start and duration (to the microsecond), the
// attributes as tags (string, bool, int64 or float64; an array attribute
// arrives as its JSON text, e.g. ["stop"]; Jaeger adds span.kind,
// otel.scope.name and, for a status, otel.status_code), events as logs
// (the name in the field "event"), and the resource's attributes.
//
// [Jaeger.WaitSpans] and [Jaeger.WaitTrace] poll until at least n spans
// are stored, then until their number holds for [Settle], so that a test
// asserting an exact count also sees a span that was still on its way. A
// process's exporter batches: the process flushes (the SDK's
// TracerProvider.Shutdown, or ForceFlush) before its spans can arrive.
//
// It is imported only by tests and by the bench.
package jaegertest
