package activities

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/metrics"
)

// Error types of the activities' failures; stable strings the workflow and
// retry policies match on.
const (
	// ErrTypeIndeterminate: a write started on an earlier attempt and never
	// recorded its result.
	ErrTypeIndeterminate = "Indeterminate"
	// ErrTypeGuard: the guard journal refused the step (a bad run id).
	ErrTypeGuard = "GuardRefused"
	// ErrTypeContent: a value the step refers to is missing from the
	// content store or damaged there; nothing is guessed.
	ErrTypeContent = "ContentMissing"
	// ErrTypeFenced: an earlier attempt of the write may still be running;
	// this attempt probed nothing and ran nothing. Its details hold the
	// earlier attempt (fence.Attempt): the workflow waits until its
	// deadline plus fence.Grace, then runs the step again.
	ErrTypeFenced = "AttemptRunning"
	// ErrTypeFenceLost: the attempt no longer held its write when the tool
	// would have run (its deadline passed, or a later attempt took the
	// step); the tool did not run in it.
	ErrTypeFenceLost = "FenceLost"
	// ErrTypeRule: the agent's approval rule decided nothing for a call the
	// model asked for (it panicked); the model step fails and no call of
	// its reply runs.
	ErrTypeRule = "ApprovalRuleFailed"
)

// StepInput is the input of CallModel and CallTool.
type StepInput struct {
	Step agent.Step `json:"step"`
	// Generation counts the executions of a write step: 1, then one more
	// for each reconcile retry.
	Generation int `json:"generation,omitempty"`
	// RunKey names the run in the guard journal: the workflow's first run
	// id, so that a later run under the same workflow id starts afresh.
	// Only writes carry it (histories recorded before that have it on every
	// step; nothing else reads it).
	RunKey string `json:"run_key,omitempty"`
	// Stream asks a model step to publish its text to the run's stream
	// while the model writes it (when the provider streams).
	Stream bool `json:"stream,omitempty"`
	// TextInStream says the run takes a streamed final answer's text back
	// from its stream: the step may record the answer by reference
	// (agent.ModelReply.Streamed), the text put in the store. Workers
	// before it was sent ignore it and record the text inline.
	TextInStream bool `json:"text_in_stream,omitempty"`
	// Agent is the agent tool whose child run the step belongs to: the
	// step runs with that agent's model and tools. "" for a top-level run.
	Agent string `json:"agent,omitempty"`
	// Catalog is the key of what the run's catalog says about its tools
	// (Catalog.Binding, Binding.Key): the worker runs the step only when
	// it is the key of its own (binding.go). "" in steps scheduled before
	// it was carried, and in runs whose catalog has no tools key.
	Catalog string `json:"catalog,omitempty"`
	// Spec is the called tool's spec as the run's catalog has it: the
	// worker runs the step only when it is its own spec of the tool. A run
	// sends it only where Catalog does not cover it (a run with no catalog
	// key) and in an activity tool's step, which PrepareCall prepares from
	// it; builds from 2406366 to ae41eb7 sent it in every tool step. Nil
	// otherwise.
	Spec *agent.ToolSpec `json:"spec,omitempty"`
}

// Activities are the activities of AgentRun, with their dependencies.
type Activities struct {
	Exec *execute.Executor
	// Guard is the journal that makes writes Indeterminate instead of
	// running them twice; its store must be shared by every worker of the
	// task queue.
	Guard *journal.Guard
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// HeartbeatEvery is how often a running step heartbeats. Default 1s.
	HeartbeatEvery time.Duration
	// Converter is the data converter of the worker's client (a codec's,
	// when payloads are encrypted): a fork reads its origin's history with
	// it (ForkPoint). Default converter.GetDefaultDataConverter().
	Converter converter.DataConverter
	// Metrics records steps, their latency, tokens and approvals. Nil
	// records nothing.
	Metrics *metrics.Recorder
	// StreamEvery is how often a streaming model step sends the text it
	// got to the run's stream (one signal each time), after its first
	// piece, which it sends at once. Default 0:
	// streams.DefaultBatchInterval, 1 s.
	StreamEvery time.Duration
	// NoStream keeps model text off the run's stream, whatever the run
	// asks: the text is in the run's history once streamed, as signals
	// (AGENTRUN_STREAM=off). Default false: runs that ask stream.
	NoStream bool
	// Identity names this worker in a write's fence (fence.Attempt), so
	// that people see which worker may still be running it. Default:
	// pid@host, as the sdk names a worker.
	Identity string
	// SignalRun sends a step's retry notice to its run (retry.go).
	// Default nil: the activity's client signals the run. The sdk's test
	// environment has no server to signal, so its tests set it.
	SignalRun func(ctx context.Context, n RetryNotice) error
	// Tracer, when not nil, records a span per step attempt with the
	// GenAI conventions' attributes (trace.go, package plumbing/tracing).
	// Default nil: tracing off, no span.
	Tracer trace.Tracer
	// Capture puts prompt, completion and tool text on those spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; never with the
	// payload codec). Default false.
	Capture bool

	// agent and system are, in the activities of a child run (forAgent),
	// the agent it runs and that agent's system prompt.
	agent, system string
}

// heartbeating runs fn while heartbeating every HeartbeatEvery, with the
// step's name as details. The first heartbeat waits for 0.8 of the step's
// heartbeat timeout, when the SDK would send its second one: a step's
// start counts as one for the timeout, and each heartbeat that reaches the
// server is a billable action on Temporal Cloud, so a model call shorter
// than that (4 s at the 5 s timeout) sends none. A dead or frozen worker
// is found as soon as before: at the timeout after the start or the last
// heartbeat.
func (a *Activities) heartbeating(ctx context.Context, step string, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	every := a.HeartbeatEvery
	if every <= 0 {
		every = time.Second
	}
	first := every
	if hb := activity.GetInfo(ctx).HeartbeatTimeout * 4 / 5; hb > first {
		first = hb
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTimer(first)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, step)
				t.Reset(every)
			}
		}
	}()
	return fn(ctx)
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}
