package metrics

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentrun/agentrun/agent"
)

// Outcome is how a step attempt ended.
type Outcome string

// The outcomes.
const (
	Completed     Outcome = "completed"
	Failed        Outcome = "failed"
	Indeterminate Outcome = "indeterminate"
)

// Decisions of a person about a gated tool call.
const (
	Approve = "approve"
	Deny    = "deny"
)

// ScopeName is the instrumentation scope of agentrun's own metrics.
const ScopeName = "github.com/agentrun/agentrun"

// stepBuckets are the bounds in seconds of the step latency histogram: tool
// calls take milliseconds, model calls seconds to minutes.
var stepBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Recorder records agentrun's own metrics. A nil *Recorder records nothing.
type Recorder struct {
	steps         metric.Int64Counter
	latency       metric.Float64Histogram
	indeterminate metric.Int64Counter
	approvals     metric.Int64Counter
	tokens        metric.Int64Counter
	cost          metric.Float64Counter
	settled       metric.Int64Counter
}

// NewRecorder creates agentrun's instruments in mp.
func NewRecorder(mp metric.MeterProvider) (*Recorder, error) {
	m := mp.Meter(ScopeName)
	r := &Recorder{}
	var err error
	if r.steps, err = m.Int64Counter("agentrun.steps",
		metric.WithDescription("Step attempts that ended, by kind (model, read, write) and outcome (completed, failed, indeterminate).")); err != nil {
		return nil, err
	}
	if r.latency, err = m.Float64Histogram("agentrun.step.duration", metric.WithUnit("s"),
		metric.WithDescription("How long step attempts took, by kind."),
		metric.WithExplicitBucketBoundaries(stepBuckets...)); err != nil {
		return nil, err
	}
	if r.indeterminate, err = m.Int64Counter("agentrun.writes.indeterminate",
		metric.WithDescription("Write attempts that ended Indeterminate: a person must reconcile them.")); err != nil {
		return nil, err
	}
	if r.approvals, err = m.Int64Counter("agentrun.approvals",
		metric.WithDescription("A person's decisions about gated tool calls (approve, deny), counted when they reach a worker.")); err != nil {
		return nil, err
	}
	if r.tokens, err = m.Int64Counter("agentrun.tokens",
		metric.WithDescription("Tokens of completed model steps, by model and direction (input, output; cache_read and cache_write are the parts of input read from and written to the provider's prompt cache).")); err != nil {
		return nil, err
	}
	if r.cost, err = m.Float64Counter("agentrun.cost",
		metric.WithUnit("USD"),
		metric.WithDescription("Cost of completed model steps in US dollars, at the models' prices (the models file), by model.")); err != nil {
		return nil, err
	}
	if r.settled, err = m.Int64Counter("agentrun.writes.settled",
		metric.WithDescription("Interrupted writes settled without a person, by how (probe, key) and the probe's answer (found, not_found, unknown, none).")); err != nil {
		return nil, err
	}
	return r, nil
}

// Settled records an interrupted write settled without a person.
func (r *Recorder) Settled(ctx context.Context, s agent.Settled) {
	if r == nil {
		return
	}
	answer := "none"
	if s.Probe != nil {
		answer = s.Probe.Verdict
	}
	r.settled.Add(ctx, 1, metric.WithAttributes(attribute.String("by", s.By), attribute.String("answer", answer)))
}

// Step records a step attempt of kind that ended with outcome after d.
func (r *Recorder) Step(ctx context.Context, kind agent.Kind, outcome Outcome, d time.Duration) {
	if r == nil {
		return
	}
	k := attribute.String("kind", string(kind))
	r.steps.Add(ctx, 1, metric.WithAttributes(k, attribute.String("outcome", string(outcome))))
	r.latency.Record(ctx, d.Seconds(), metric.WithAttributes(k))
	if outcome == Indeterminate {
		r.indeterminate.Add(ctx, 1)
	}
}

// Decision records a person's decision about a gated tool call: Approve or
// Deny.
func (r *Recorder) Decision(ctx context.Context, decision string) {
	if r == nil {
		return
	}
	r.approvals.Add(ctx, 1, metric.WithAttributes(attribute.String("decision", decision)))
}

// Tokens records the tokens of one model call to model.
func (r *Recorder) Tokens(ctx context.Context, model string, u agent.Usage) {
	if r == nil {
		return
	}
	m := attribute.String("model", model)
	if u.InputTokens > 0 {
		r.tokens.Add(ctx, u.InputTokens, metric.WithAttributes(m, attribute.String("direction", "input")))
	}
	if u.OutputTokens > 0 {
		r.tokens.Add(ctx, u.OutputTokens, metric.WithAttributes(m, attribute.String("direction", "output")))
	}
	// parts of the input, counted in it too
	if u.CacheReadTokens > 0 {
		r.tokens.Add(ctx, u.CacheReadTokens, metric.WithAttributes(m, attribute.String("direction", "cache_read")))
	}
	if u.CacheWriteTokens > 0 {
		r.tokens.Add(ctx, u.CacheWriteTokens, metric.WithAttributes(m, attribute.String("direction", "cache_write")))
	}
	if u.Cost > 0 {
		r.cost.Add(ctx, u.Cost, metric.WithAttributes(m))
	}
}
