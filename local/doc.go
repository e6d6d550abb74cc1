// Package local is the local engine: it drives agent runs in this process
// over a journal Store (package journal), and operates on them and shows
// them, as the Temporal workflow does on a cluster.
//
// [Engine.Drive] starts a run with its input, or resumes it when its
// journal holds the same input, and drives the agent loop until the run
// completes or needs a person. Every step goes through the write guard
// (journal.Guard), so a resumed run calls no model and no tool twice for
// one step, and a write whose effect is unknown is Indeterminate, never
// run twice by the engine. [Engine.Signal] (approve, deny, reconcile,
// budget, message), [Engine.Cancel] and [Engine.Reconcile] record an
// operator's input after checking its shape (operator.CheckShape) and then
// the run (operator.Check); a refused input writes nothing. [Engine.Show],
// [Engine.Waiting] and [Engine.Step] read a run.
//
// # What the engine guarantees
//
//   - One driver per run. Two processes that drove one run at once would
//     each see the other's write in flight as started and not completed:
//     Indeterminate, with a suggestion to retry it that would run it
//     twice. So Drive holds the run's driver lock (journal.Locker) while it
//     drives the run, and a second Drive of that run returns a
//     *journal.BusyError naming the holder's pid, having written nothing
//     to an existing run (Drive checks the input, then takes the lock: of
//     two drivers racing to start a new run, either may write its
//     run.started record, the same for both). Signal and the readers take
//     no driver lock: a person can approve or reconcile while a run is
//     driven.
//   - No step after a lost lock. Drive asks the lock whether it is still
//     held (journal.Lock.Held) right before every step, and if not it
//     returns a *journal.LockLostError naming the step it did not run;
//     driving the run again resumes it. A step already running when the
//     lock goes runs to its end; a write is fenced (package fence), so
//     nobody else probes or runs it before its deadline.
//   - Cancel ends a run: run.cancelled stops its driver's running step
//     within a quarter second (within journal.WakeBound, in practice at
//     once, when it follows the run), and nothing runs after it. A write
//     that started and has no result is named in the Cancelled outcome.
//   - Retries of model and read steps only, never of a write. With a
//     Retry policy, a failed model or read step is tried again while the
//     policy allows (OnRetry is told first); when it does not, Drive
//     records why the run stops (run.stopped: journal.Stop, the step, its
//     attempts, how long they took, the last error) and returns a
//     *StoppedError, and so does a driver stopped by its context (Ctrl-C,
//     SIGTERM) while it retried one (Stop.Interrupted). run.stopped does
//     not end the run: Show reports it while no later record shows the run
//     went on, and the next Drive resumes it with the step's attempts
//     afresh.
//   - A tool call is gated once, when the model asks for it: Drive records
//     the policy's decision about each call of a reply in the model step's
//     step.completed record, and the loop keeps to it, so a tools file
//     changed while a call waits (the tool now says read, or no approval)
//     does not let it through unapproved.
//   - A run's budget (agent.Budget: model calls and tokens) is recorded in
//     its run.started record and raised by budget signal records; Drive
//     stops a run whose next model call it does not allow as
//     BudgetExceeded.
//   - A message signal record (a user message) goes to the model step
//     after the newest one recorded when it was written; the loop gives it
//     to that call after its tool results. Once a run is Completed or
//     Failed, Signal refuses every input.
//   - The signal records are the operator's inputs (operator.Signal): the
//     fold applies them with operator.Target.Apply, as the Temporal workflow
//     does; only a reconcile is also kept by its step (done is recorded as
//     the step's step.completed when the run goes on, retry starts the
//     step's next generation). The idempotency key of a local run is
//     agent.IdempotencyKey of the run id, the step and one more than the
//     person's retries of it.
//   - An approval that nobody decided within its timeout (counted from the
//     model step's step.completed) is denied, and the model is told.
//
// # Child runs
//
// A call of an agent tool runs the agent as a child run with its own
// journal in the same Store (child.go): its id agent.ChildRunID, its input
// agent.ChildInput, its budget what the caller has left (agent.Budget.Left),
// driven by the caller's driver with the agent's loop and executor
// (Engine.Agents). Its final answer is the call's recorded result; a child
// that Failed or was Cancelled is an error result. Its model calls and
// tokens count against the caller's budget (agent.Budget.LimitTree) and in
// the caller's Show. A child waiting for a person makes the caller wait the
// same way (Drive, Show, Signal's checks); an approve, deny or reconcile
// sent to the caller goes to the child, checked against the child's state;
// a budget signal to the caller gives the child its new share when the
// caller is driven next. Cancel of the caller cancels the child after it.
//
// # Following a run
//
// An Engine with Follow set does not return where its run waits for a
// person (AwaitingApproval, Indeterminate, BudgetExceeded) or, a session,
// for a message (Idle): it keeps the run's lock, marks it as following
// (journal.FollowMarker), and sleeps on a Watch of the journal
// (journal.Watcher) until a record lands, or until the first approval
// timeout of its pending calls or its session's idle time passes. Then it
// loads the journal and decides again: an approval, a denial, a reconcile,
// a budget or a message lets it go on; a run.cancelled ends it; an expired
// call is denied. The running step of a following driver learns of a
// cancel through the same Watch. When its context ends while it waits,
// Drive returns the wait in a *FollowStoppedError; a later Drive goes on
// from there.
//
// A session is a run whose run.started records Session, how long it waits
// Idle after an answer; a message wakes it (the next model step takes it),
// and with none for that long after the answer's step.completed, it is
// Completed with its last answer.
//
// # Forks
//
// [Engine.Fork] starts a run that goes on from a step of a run that ended
// (agent.Fork; fork.go): the steps before that step are the origin's
// record, read from the engine's own Store (no model call, no tool); the
// fork's run.started records the fork and the point computed from the
// origin's loop, and the fold starts there, so its budget, usage and steps
// are its own. A fork point before writes the origin made is refused
// (agent.HazardError) until acknowledged. A replay fork runs no tool: its
// calls are answered from the origin's record (agent.Replay), and
// [Engine.Drift] reports where it departs (agent.CompareRuns).
//
// Journals written by older builds (no gates, no budget) are read as
// docs/compatibility.md says.
package local
