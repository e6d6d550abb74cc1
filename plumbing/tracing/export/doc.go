// Package export makes every agent run one OpenTelemetry trace, exported
// over OTLP (gRPC or HTTP), with spans named and attributed by the
// OpenTelemetry GenAI semantic conventions (package plumbing/tracing), and
// never duplicated by a replay. It links the OpenTelemetry SDK and its
// exporters, so only the programs import it: the workflow and the
// activities take the API's trace.Tracer through package plumbing/tracing.
//
// Settings (config.Config's Tracing, from OpenTelemetry's standard
// variables: OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL,
// OTEL_EXPORTER_OTLP_ENDPOINT, their _TRACES_ forms, OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG and OTEL_SDK_DISABLED):
// tracing is off when no exporter is named and no endpoint is set, and
// then Start returns a nil *Provider, whose methods add no interceptor, no
// exporter and no span: the programs run as they did before. On, Start
// builds a batching exporter: OTLP over http/protobuf (the default, as
// the specification says) or gRPC, or the console's; the OTLP exporters read the rest of the
// standard variables themselves (headers, certificates, timeout,
// compression). An export that fails (the backend is unreachable, speaks
// the other protocol) is a warning in the log, once for each kind of
// error, is not retried, and never fails a step; Shutdown flushes what is
// queued.
//
// What a trace holds. The programs' Temporal clients and workers carry the
// sdk's tracing interceptor (go.temporal.io/sdk/contrib/opentelemetry,
// Provider.ClientInterceptors), which propagates the trace context in
// Temporal headers: the starter's StartWorkflow:AgentRun span is the root, the
// workflow's StartActivity spans (one per scheduled step) its children, each
// activity attempt's RunActivity span their child, and inside it the span
// this package's conventions name: "chat {model}" for a model step and
// "execute_tool {name}" for a tool step (activities), one per attempt. A
// wait for a person (approval, Indeterminate, budget, an idle session) is a
// span "wait {kind}" from the workflow, ended when it is answered, with
// the outcome and how the answer came (signal or update).
//
// Replay. The sdk's interceptor starts its outbound workflow spans
// (StartActivity, signals, updates) only when the workflow is not
// replaying, but its RunWorkflow span is started every time a worker
// (re)builds the workflow from its history, and ended by the worker that
// sees the run end, so a replay (a worker restart, a cache eviction, a
// replayer) would send it again with a new span id. This package never
// records that span: it stands for its parent (the starter's span, from
// the run's header) as a non-recording span with the parent's ids, so the
// workflow's children hang off the starter's span and a replay emits
// nothing. A run started by a client without the interceptor (temporal
// workflow start) has no parent: its trace id and root span id are then
// derived from the namespace, workflow id and run id (the same on every
// replay), and the backend shows the root span as missing. Workflow-side
// spans of this package (the waits) are emitted only from code that is not
// replaying (workflow.IsReplaying), and add no command.
//
// Continue-as-new: one trace per run. The interceptor's
// NewContinueAsNewError (sdk v1.51, interceptor/tracing_interceptor.go)
// writes the current workflow span into the headers of the next execution
// when not replaying, and the next execution's RunWorkflow reads it as its
// parent; here that span is the run's root context, so every execution of
// a run, however many times it continued as new, is in the same trace under
// the same root. A run without a starter's context keeps the root derived
// from its first execution's run id the same way.
//
// Signals and updates. The interceptor's workflow-side HandleSignal and
// HandleUpdate spans are not recorded: their parent is the sender's span
// (or none), so they would not be in the run's trace, and sdk v1.51 records
// HandleUpdate on replay too (its ExecuteUpdate does not check
// workflow.IsReplaying, unlike HandleSignal). The wait spans say who
// answered instead. The sender's SignalWorkflow / UpdateWorkflow spans of
// the operator's operations (approve, deny, reconcile, budget, message)
// are kept, in the sender's (reconcile's) own trace. The run's own traffic
// (stream publishes and polls, retry notices, queries, validators) would
// be a span each: those are dropped, so a trace shows steps and people,
// not plumbing.
//
// Content: prompt and completion text are recorded (gen_ai.input.messages,
// gen_ai.output.messages) only with Settings.CaptureContent
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, the
// conventions' opt-in), and config refuses it when the payload codec is
// on: text the codec keeps from Temporal never goes to a trace backend.
// Without capture a failed step's spans carry its error type (error.type,
// the exception event's exception.type), never its text, which may quote a
// tool's output.
//
// Logs: the activities' log lines carry trace_id and span_id of the step
// attempt's span (activities.Activities.log).
package export
