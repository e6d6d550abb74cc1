// Package metrics records agentrun's own metrics through the OpenTelemetry
// metric API; it links no exporter. Package metrics/prometheus serves them,
// with the Temporal sdk's, on a worker's Prometheus endpoint.
//
// Recorder counts what the activities see, on the worker that ran them
// (the names as a Prometheus endpoint shows them):
//
//	agentrun_steps_total{kind, outcome}          step attempts that ended: completed, failed or indeterminate
//	agentrun_step_duration_seconds{kind}         how long those attempts took (histogram)
//	agentrun_writes_indeterminate_total          write attempts that ended Indeterminate
//	agentrun_writes_settled_total{by, answer}    interrupted writes settled without a person: by probe or key;
//	                                             answer is the probe's (found, not_found, unknown) or none
//	agentrun_approvals_total{decision}           a person's decisions about gated tool calls: approve, deny
//	agentrun_tokens_total{model, direction}      tokens of completed model steps, direction input or output;
//	                                             cache_read and cache_write: the parts of input the provider
//	                                             read from and wrote to its prompt cache (so not to be added)
//
// They count attempts, not steps: a step Temporal retried counts once per
// attempt that ended. Decisions are made in the workflow and counted where
// they reach a worker: an approval with the first attempt of the call it
// lets run, a denial with the first attempt of the model step that tells
// the model of it (so a run cancelled in between never counts its denial).
// A write whose last attempt timed out without reporting is Indeterminate
// in the workflow but counted as nothing here.
//
// A nil *Recorder records nothing, so code that takes one works without
// metrics.
package metrics
