// Package tracing names agentrun's spans and their attributes by the
// OpenTelemetry GenAI semantic conventions, on the OpenTelemetry trace API
// alone: it links no SDK and no exporter.
//
// The activities start a span per step attempt with StartChat ("chat
// {model}") or StartTool ("execute_tool {name}") on the tracer they are
// given, set the Key attributes and end it with End, which records an
// error's type, never its text. The workflow records a wait for a person
// with Wait, a span "wait {kind}" ended when the wait is answered, only
// when its worker carries Interceptor, never while it replays, and with no
// command.
//
// Package plumbing/tracing/export builds a program's tracing from
// OpenTelemetry's standard variables: the SDK, the OTLP or console
// exporter, the Temporal sdk's tracing interceptor, and what a trace holds
// through replays and continue-as-new.
package tracing
