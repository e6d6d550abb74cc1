// Command chaos is a crash campaign: it runs the hand example (scripted
// model: lookup → create_ticket, gated on approval → answer) again and
// again, each trial on a fresh run with its own ticket file, and in each
// trial it crashes the system at one chosen kill point, deliberately:
//
//  1. model: a worker SIGKILLed while it holds a CallModel (the scripted
//     model's optional "delay" keeps it there);
//  2. read: a worker SIGKILLed inside lookup (AGENTRUN_DEMO_DELAY);
//  3. write-before: every worker SIGKILLed while one holds create_ticket
//     after the guard recorded its start and before the tool ran
//     (AGENTRUN_TEST_HOLD_BEFORE);
//  4. write-after: likewise after the ticket was written
//     (AGENTRUN_TEST_HOLD_AFTER);
//  5. between: the worker that completed the last model step SIGKILLed
//     while the run is parked on approval, with no step in flight;
//  6. postgres: PostgreSQL restarted while lookup runs.
//
// Kill points are dealt round-robin, then shuffled with a seeded RNG
// (printed at the start), so that N trials hit each point at least
// N/6 times. Trials run on the Temporal engine: a fleet of three worker
// processes (built once) sharing a private PostgreSQL (internal/pgtest)
// and a tuned dev server (internal/devserver). A killed worker is
// replaced by one without the hold. When the run waits for approval the
// campaign approves it; when it is Indeterminate the campaign settles it
// from the ground truth, the trial's ticket file: `reconcile done` with
// the ticket id when the ticket exists, `reconcile retry` when it does not.
//
// Per trial it asserts: the run completes; exactly one ticket; no model
// step completed twice (one ActivityTaskCompleted per llm/N in the
// history); Indeterminate only at kill points 3 and 4, where the write's
// effect really was uncertain. A kill counts as a hit only when the
// process really was at the point: the hold's log line was seen, or the
// pending activity was STARTED on the killed worker.
//
// Not covered: the local engine (starter --local), and a dev server
// restart (the tuned dev server keeps its state in memory, so a run does
// not survive it).
//
// It prints a table per kill point and writes it as the "## Crash
// campaign" section at the end of BENCHMARKS.md (or -out FILE), and exits
// non-zero when a trial fails an assertion or, in a campaign of 100 trials
// or more, a point got fewer than 5 hits.
package main
