// Package activities holds the Temporal activities of an agent run:
// ListTools (the catalog the run records once), CallModel and CallTool.
// They are methods on Activities, which holds their dependencies: the
// executor (model provider, tool set and content store) and the guard
// journal. API keys live in those
// dependencies, inside the worker; they never appear in an activity's
// input, result or error.
//
// The worker is the authority: an activity's input comes from whatever the
// workflow trusted, so CallTool first checks a tool step against the
// worker's own tools (Exec.Tools) and refuses, with the non-retryable error
// type StepRefused and before anything is read, recorded or run, a tool the
// worker does not offer, one it knows as a write arriving as a read (or as
// idempotent, or settled by a key argument or probe its tool does not
// declare), and one its policy denies. CallModel refuses a tool-spec key
// other than the one of the tools the worker lists (Executor.ToolsKey), so
// the model is offered only the worker's tools. A provider's error text is
// scrubbed of the worker's secrets (package plumbing/secret) before it
// reaches the run's history.
//
// The write guard: CallTool runs a write that is not idempotent through
// journal.RunStep against a journal store that every worker of the task
// queue shares. The first attempt records the start, runs the tool and
// records the result. A later attempt (Temporal retried it because the
// worker died or the attempt timed out) finds either the result, which it
// returns without running the tool, or a start without a result, which it
// reports as a non-retryable error of type Indeterminate: nobody knows
// whether the write took effect, so a person must reconcile it.
//
// Unless the write declares how it is settled (its step's Settle: an
// idempotency key, a probe): the workflow puts the key of the execution in
// the step (the same on every attempt; Prepare fills the argument), and the
// later attempt runs the write again with it, or asks the probe through
// the guard's Probe (the executor's) and records the probe's result, runs
// the write once more, or reports Indeterminate with the probe's answer
// (journal.RunStep's table). A keyed write gets 10 attempts, a probed one
// 3; a timed-out call of either is a retryable error, for the next attempt
// to settle. A result settled this way carries agent.Settled; CallTool
// counts it (agentrun_writes_settled_total) and the workflow logs it.
//
// Fenced attempts: CallTool runs a guarded write through
// journal.RunAttempt with the attempt (Temporal's attempt number, this
// worker's Identity) and the tool's timeout, so the attempt holds the step
// until its deadline and its tool's context ends then (and when Temporal
// refuses its heartbeat). A later attempt that finds an earlier one that
// may still act fails non-retryably with type AttemptRunning, the earlier
// attempt in its details, and the workflow waits until that attempt's
// deadline plus fence.Grace before it runs the step again; an attempt
// that lost its step before the tool ran fails with type FenceLost. A
// write's activity start-to-close is its tool's timeout plus WriteSlack
// (WriteStartToClose); CheckWriteTimeouts refuses at start-up a tool whose
// timeout leaves no room.
//
// Streaming: a CallModel whose input asks (StepInput.Stream) and whose
// provider streams (llm.Streamer) publishes the model's text to its run's
// stream while the model writes it (progress.Token, with the step and the
// attempt), through a streams.Publisher: a turn's first piece at once, then
// the pieces joined in one Token about every StreamEvery after the last (at
// once when 4 KiB are waiting), the rest when the model is done; the
// recorded reply says which attempt streamed
// (agent.ModelReply.Streamed). The stream is for people watching: a piece
// that cannot be published is logged and dropped, never failing the step;
// NoStream (AGENTRUN_STREAM=off) turns it off on a worker. When the input
// also says the run takes its text back from its stream
// (StepInput.TextInStream) and every piece reached the stream, a final
// answer longer than 256 bytes is recorded by reference: the text is put
// in the content store and the reply carries its key, size and preview,
// so that the run's history holds it once, in the stream's publish
// signals. The workflow rebuilds it from its stream and believes it only
// when it is the text the key names; otherwise it reads it from the store
// (ReadAnswer, a local activity). Such a step also keeps back the text
// joined since its last publish when the model is done (the reply's
// StreamTail, or the end of its inline text), which the workflow publishes
// when it records the reply: one publish signal, and the workflow task it
// wakes, fewer a turn.
//
// Values by reference: ListTools keeps the tools' full specs in the content
// store and records their key; CallModel's input refers to the conversation
// and CallModel and CallTool keep large values in the store (see package
// execute), so inputs and results stay small whatever the turn. A tool
// call's arguments kept by reference are read before the guard records a
// start. A reference whose content is missing or damaged fails the step
// with the non-retryable error type ContentMissing, naming the run, the
// step and the key.
//
// The catalog also records the model's request timeout, so that a model
// step's activity outlives the request, and whether a final answer cut off
// by the length limit fails the run (AGENTRUN_FAIL_ON_CUT_ANSWER of the
// worker that listed the tools), and one with no text
// (AGENTRUN_FAIL_ON_EMPTY_ANSWER), so that every worker's loop decides
// alike. A model request that timed out (the request timeout, or a
// stream's idle timeout) fails CallModel with the retryable error type
// Timeout.
//
// Model and tool activities heartbeat every second while they run (not at
// their start: a first heartbeat is a blocking call that every short step
// would wait for), so that a dead worker is noticed within the heartbeat
// timeout.
//
// Metrics: with Activities.Metrics set, CallModel and CallTool count each
// attempt that ends by kind and outcome (completed, failed, indeterminate),
// with its latency, the tokens of model replies, a gated tool call's first
// attempt as approved, and a denial by a person (a tool message beginning
// agent.DeniedByOperator) with the first attempt of the model step that
// carries it (package metrics). Nothing is recorded in workflow code.
//
// Traces: with Activities.Tracer set (tracing on, package
// plumbing/tracing), each attempt of a step is one span under the sdk
// interceptor's RunActivity span, named by the GenAI semantic conventions:
// "chat {model}" for CallModel (provider, request and response model,
// tokens, finish reason) and "execute_tool {name}" for CallTool (the
// tool's kind, how a write settles, and for a guarded write the guard's
// decision: ran, replayed, settled_by_probe, settled_by_key, indeterminate,
// fenced). Text (messages, arguments, results) only with
// Activities.Capture. Log lines logged inside a step carry its trace_id
// and span_id.
package activities
