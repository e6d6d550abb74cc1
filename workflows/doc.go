// Package workflows holds AgentRun, the Temporal workflow of one agent
// run. It drives the agent loop of package agent: every model step is a
// CallModel activity and every tool step a CallTool activity, with the step
// name as activity id. The loop is re-run after every new fact (an
// activity result, an approval, a denial, a reconciliation) from the
// checkpoint of the current turn, so a completed step is never executed
// again; the facts of settled turns are forgotten.
//
// Long runs: a model step's input refers to the conversation in the content
// store, so each step adds a few KiB of history whatever the turn. Before a
// step, the run continues as new when Temporal suggests it (or after
// Input.ContinueAfter steps): it first lets handlers finish and applies
// the operator signals already delivered, then carries a Continued
// checkpoint (the loop's checkpoint, the current turn's facts and write
// generations, the catalog and the state, bounded whatever the turn). That
// checkpoint is honoured only in an execution the run's own continue-as-new
// started (its continued-execution run id is set, it is attempt 1, and it
// has no cron schedule: trustedContinued): a start input that sets it fails
// the run at once (ForgedContinued) and runs nothing, and so does a
// workflow retry (RetriedContinued), which reuses the retried execution's
// input; a cron schedule is refused outright (CronRefused), since each cron
// run reuses the client's input. So a client with start rights cannot
// declare tool kinds or queue calls. The catalog, the result of the run's
// first activity, is bound to the worker's tools: every step carries the key
// of what it says about the tools (activities.Binding), and a tool step the
// called tool's spec, which the worker checks against its own; a catalog no
// worker could have listed (activities.MalformedCatalog) fails the run
// before any step. A step the worker refuses (activities.ErrTypeRefused)
// fails the run, naming the difference; a refused write ran nothing, so it
// is not Indeterminate. The
// workflow id, step names, usage, the guard's run key (the first
// execution's run id), search attributes and memo carry over; the state
// query and the current details come from the newest execution.
//
// A run that waits on a person (AwaitingApproval, Indeterminate,
// BudgetExceeded) continues as new from its wait too, when Temporal
// suggests it or its stream served maxPolls polls, carrying its facts, its
// pending calls' approval clocks (Continued.Since) and its stream: a flood
// of signals to a parked run (each one a history event, up to 2 MiB) moves
// it to a fresh history instead of past the server's limits (51,200
// events, 50 MiB). Refused operator inputs cost an AgentRunStep/Status
// upsert and a stream item only for the first QuietRejects in a row; later
// ones are counted in State.Rejects and shown in the current details (no
// command), until an input is applied. Both changes are guarded by
// workflow.GetVersion, so committed histories replay unchanged
// (docs/compatibility.md lists each guard).
//
// An approval timeout (operator.Expiry, the rule of both engines) is a
// durable timer from the completion of the model step that asked for the
// call (run.turn.asked, carried as Continued.Asked); runs recorded before
// that rule started it at the run's first wait on the call, and replay so
// (versionExpiryClock, taken when a clock starts).
//
// Operators act through signals approve, deny, reconcile and budget
// (payloads as in the operator contract), received as raw values and
// validated by the workflow: a bad payload is recorded as rejected with a
// reason that the state query and the current details show, and never
// wedges the run; a signal under any other name (a misspelled "aprove")
// is recorded as rejected the same way, naming the valid signals. The same
// operations are updates with validators, which give the caller the error
// at once; an accepted update that reaches a waiting run answers with the
// state once the main loop has acted on it (started the next step, or waits
// again), so the answer shows the status the run moved to. The query state
// returns where the run stands, each pending call with its arguments digest
// (agent.ArgsDigest). An approve or deny may name that digest ("Digest")
// and the run's first execution ("Execution"); one that names others is
// refused, so a decision applies only to the arguments and the run the
// operator looked at. Current details fence code blocks with more backticks
// than any run in their text, so no argument or reason closes its block.
//
// Budgets: Input.MaxTurns and Input.MaxTokens limit the model calls and
// their tokens. Before a model call past a limit the run waits as
// BudgetExceeded until a budget input raises it (above what is used); the
// limits ride in the Input across continue-as-new.
//
// Messages and sessions: a message input (a user message) is queued in
// agent.Facts.Messages under the model step it goes to, the one after the
// newest model step started, so the loop gives it to that call after its
// tool results, deterministically; the facts ride in Continued. A run with
// Input.Session waits Idle after each answer (a durable timer of
// Input.SessionIdle, from the starter's AGENTRUN_SESSION_IDLE) until a
// message wakes it or the timer completes the run with its last answer.
// Neither adds a command to runs without messages or sessions.
//
// A final answer cut off by the model's length limit completes the run
// with State.CutOff and Result.CutOff set and a "Cut off" line in the
// current details, or fails it when the catalog says so (Catalog.FailOnCut).
// A final answer with no text is flagged alike (State.Empty, Result.Empty,
// an "Empty" line), or fails the run with Catalog.FailOnEmpty. A model
// step's start-to-close timeout is StepTimeout, or the model's request
// timeout plus a minute when that is longer: the request timeout also caps
// a streamed answer, whose idle timeout is never longer.
//
// Live progress (stream.go): every run hosts a Workflow Streams stream
// (package streams) with the topics of package progress: the workflow
// publishes an Event for every step started and completed, every status
// change and every rejected input (including malformed publish signals),
// and CallModel publishes the model's text (Tokens) when Input.Stream asks
// (default: for sessions). Publishing from workflow code adds no command;
// a publish signal is a history event. The stream is drained before the
// run continues as new and carried into the next execution (its newest
// 32 KiB); before the run completes it waits up to 2 s for a subscriber
// that has polled to read to the end (streams.Host.Linger: no timer when
// no subscriber polled, so histories without subscribers are unchanged).
// Operator signals are taken with ReceiveAsync once their channel holds
// one, never a blocking Receive, so a signal that arrives in the task in
// which the run continues as new is applied before it does.
//
// Settling writes: a write step whose tool declares an idempotency key or a
// probe (agent.Settle) gets its key from the workflow: agent.IdempotencyKey
// of the run key, the step and the generation, in the activity input, the
// same on every attempt. A keyed write gets 10 attempts (it is safe to
// repeat), a probed one 3; the settlement the guard returns in the result
// is kept in State.Settled (the newest MaxSettled), the step record and the
// current details, and the activity summary names how the write settles.
//
// The run shows in the Web UI through the search attributes AgentRunStatus
// and AgentRunStep, the prompt as static summary, and current details
// that say, in markdown, what the run waits for and the exact command that
// unblocks it.
//
// Versioning: AgentRun is registered pinned (RegisterOptions). On workers
// that join a worker deployment (AGENTRUN_DEPLOYMENT), a run stays on the
// build it started on until it ends, its continue-as-new executions
// included, and new runs go to the deployment's current (or ramping)
// build. A run parked for days on an approval or an Indeterminate write
// therefore finishes on the code that wrote its history, and a change to
// this package never meets the histories of older builds on a versioned
// fleet; an old build can be stopped once it has drained (docs/fleets.md "Upgrade
// a fleet"). Pinned rather than auto-upgrade because an auto-upgraded run
// would replay on the new build and needs every change guarded with
// workflow.GetVersion forever; unversioned workers still need that.
//
// Replay guard: TestReplay replays the committed histories in testdata,
// captured from real runs of the current build (temporal workflow show -w
// RUN --output json). A change that fails them is a change of command
// order: guard it with a version (a change id of its own, taken with
// execution.v.of and listed in impliedBy under the next version of
// versionChanges, so that a new execution records no marker for it), or
// make it deliberately:
// replace the histories it breaks with histories captured from the new
// build, and say in the commit message which build's runs it breaks (the
// last commit whose code replays them), so that operators keep that build
// running, versioned, until its runs have drained.
//
// Traces (package plumbing/tracing, when the worker traces): a wait for a
// person that an input answers (an approve, deny, reconcile, budget or
// message by signal or update, an approval timeout, a session's idle
// timer) is one span "wait {kind}" in the run's trace, from when the run
// began to wait to the answer (trace.go). It is made only when the
// workflow is not replaying, and adds no command, so histories replay
// unchanged and a replay sends nothing.
//
// The parts of AgentRun, one file each: agentrun.go the run's state and
// AgentRun itself; start.go setting a run up (its input, the checkpoint it
// continues, the tool list); loop.go the loop (a step, or continue as new);
// step.go one step's activity and its result, and the fence's waits;
// options.go the activity options, a pure function of the step and the
// catalog; outcome.go where the loop stands when it asks for no step (an
// answer, a failure, a wait for a person) and how a run ends; idle.go a
// session's wait for a message on its idle timer; operator.go
// the operator's signals and updates (package operator decides them);
// publish.go the search attributes and current details; stream.go the
// run's stream; trace.go the waits in the run's trace.
package workflows
