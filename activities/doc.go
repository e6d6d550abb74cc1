// Package activities holds the Temporal activities of an agent run:
// ListTools (the catalog the run records once), CallModel and CallTool.
// They are methods on Activities, which holds their dependencies: the model
// provider, the tool set and the guard journal. API keys live in those
// dependencies, inside the worker; they never appear in an activity's
// input, result or error.
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
// Model and tool activities heartbeat while they run, so that a dead
// worker is noticed within the heartbeat timeout.
package activities
