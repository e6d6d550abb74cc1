// Package prometheus gives a worker its Prometheus endpoint.
//
// An Endpoint owns an OpenTelemetry MeterProvider whose readings a
// Prometheus registry exports at /metrics; the Temporal sdk's metrics
// (SDKHandler, names prefixed temporal_) and agentrun's (metrics.Recorder,
// names prefixed agentrun_) go through it. /healthz answers 503 until the
// worker is polling (Ready) and again once it is stopping (Stopping), 200
// in between, with a one-line body.
//
// It links the Prometheus client and the OpenTelemetry metric SDK, so only
// the programs import it; the activities take a metrics.Recorder.
package prometheus
