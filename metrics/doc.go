// Package metrics gives a worker its Prometheus endpoint and agentrun's own
// metrics.
//
// An Endpoint owns an OpenTelemetry MeterProvider whose readings a
// Prometheus registry exports at /metrics; the Temporal sdk's metrics
// (SDKHandler, names prefixed temporal_) and agentrun's (Recorder, names
// prefixed agentrun_) go through it. /healthz answers 503 until the worker
// is polling (SetReady(true)) and again once it is stopping, 200 in
// between, with a one-line body.
//
// Recorder counts what the activities see, on the worker that ran them:
//
//	agentrun_steps_total{kind, outcome}          step attempts that ended: completed, failed or indeterminate
//	agentrun_step_duration_seconds{kind}         how long those attempts took (histogram)
//	agentrun_writes_indeterminate_total          write attempts that ended Indeterminate
//	agentrun_approvals_total{decision}           gated tool calls that ran after an approval (decision="approve")
//	agentrun_tokens_total{model, direction}      tokens of completed model steps, direction input or output
//
// They count attempts, not steps: a step Temporal retried counts once per
// attempt that ended. Denials never reach a worker (the workflow decides
// them), so they are not counted here; the run's state query lists what a
// run waits for. A write whose last attempt timed out without reporting is
// Indeterminate in the workflow but counted as nothing here.
//
// A nil *Recorder records nothing, so code that takes one works without
// metrics.
package metrics
