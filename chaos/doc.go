// Command chaos is a crash campaign: it runs scripted agent runs again and
// again, each trial on a fresh run with its own ticket file, and in each
// trial it crashes the system at one chosen kill point, deliberately, on
// one of the two engines.
//
// Scenarios (alternating within each kill point): "hand", the hand
// example (lookup → create_ticket, gated on approval → answer: 3 model
// turns, 1 ticket), and "long" (long.json: 8 model turns, 4 lookups, 3
// create_ticket calls with distinct titles, each gated). The step a trial
// crashes in is chosen at random (seeded) among the scenario's steps of
// the right kind, so kills land inside the run, not only at its start.
//
// Kill points on the Temporal engine (a fleet of three worker processes,
// each on its own empty host folder, sharing a private PostgreSQL
// (internal/testkit/pgtest) and a tuned dev server on a SQLite file
// (internal/testkit/devserver)):
//
//  1. model: the worker holding the chosen CallModel SIGKILLed (the
//     script's delay on that turn keeps it there);
//  2. read: the worker holding the chosen lookup SIGKILLed
//     (AGENTRUN_DEMO_DELAY);
//  3. write-before: the fleet SIGKILLed while a worker holds the chosen
//     create_ticket after the guard recorded its start and before the tool
//     ran (AGENTRUN_TEST_HOLD_BEFORE=STEP);
//  4. write-after: likewise after the ticket was written
//     (AGENTRUN_TEST_HOLD_AFTER=STEP);
//  5. between: the worker that completed the last model step SIGKILLed
//     while the run is parked on the chosen approval, with no step in
//     flight;
//  6. postgres: PostgreSQL restarted while the chosen lookup runs;
//  7. devserver: the dev server stopped (an interrupt) while the chosen
//     lookup runs, kept down 2 s, and started again on the same file and
//     port; the workers keep running and reconnect.
//
// A killed worker is replaced by one without the hold.
//
// Freeze and partition points on the Temporal engine: one worker starts
// with the hold (AGENTRUN_TEST_HOLD_BEFORE or _AFTER at the chosen
// create_ticket, with AGENTRUN_TEST_HOLD_FOR so that the held write goes on
// by itself, as a frozen or cut-off process would) or the slow model call;
// when it is there, it is frozen or cut off for at least faultFor (the
// heartbeat timeout, 5 s, plus 2 s) and until Temporal has started a retry
// of the step or no longer has it pending (at most 45 s), two workers
// without the hold start and carry the run on, and then it is resumed or
// healed and goes on where it was:
//
//  8. freeze-write-before: SIGSTOP inside create_ticket before its effect
//     (the hold goes on 4 s after it began: on SIGCONT at once);
//  9. freeze-write-after: likewise after its effect;
//  10. freeze-model: SIGSTOP inside the chosen model call;
//  11. cut-temporal: the worker reaches the Temporal frontend through a
//     proxy (internal/testkit/netfault: Shopify's toxiproxy, run in the campaign's
//     process on 127.0.0.1), which is cut while it holds create_ticket
//     before its effect; the write goes on 8 s after it began (a second
//     after the heal, or still cut off if the retry took longer);
//  12. cut-postgres: likewise to PostgreSQL (AGENTRUN_JOURNAL through a
//     proxy); the write goes on 4 s after it began, while cut off.
//
// Each of them runs in three settle modes of create_ticket, declared in the
// trial's tools file: no key and no probe (the run may be parked
// Indeterminate and the campaign settles it from the ticket file, as a
// person would, possibly while the first attempt is still frozen), probe
// only (find_ticket by title), key only (request_id). Every trial's tools
// file gives create_ticket a 12 s timeout. A freeze or cut counts as a hit
// only when the worker really was at the point: the chosen model call was
// STARTED on it, or it had logged the hold of the chosen step and the
// hold's end (released) is logged after the fault began, or never. After the run completes the campaign waits for
// the faulted worker to be resumed or healed and for its held write to go
// on (only the tool's own check of its context, tools.Live, can stop it
// then), so that a late second ticket is counted.
//
// Kill points on the local engine (`starter --local` on a folder journal,
// no server), points 1–5: the starter SIGKILLed inside the chosen model
// call (the kill comes 300 ms into a 2 s call: the step before it
// completed, it has not), inside the chosen lookup (likewise), holding the
// chosen create_ticket before or after its effect (the same hold points:
// they live in the executor both engines share), and between steps (right
// after the chosen lookup's completion was recorded, while the next model
// call, slowed to 2 s by its turn's delay, has recorded nothing). The campaign then runs
// `starter --local` again, as an operator would, until the run completes.
// Point 13, follow: `starter --local --follow` runs the scenario, approved
// from another process (reconcile --local approve) while it waits, and is
// SIGKILLed while it waits on the chosen approval; one more `starter
// --local --follow` resumes the run and completes it, going on by itself
// after each approval (two starts in all, or the trial fails).
//
// Kill points on a real Temporal cluster (engine cluster, chaos/cluster.go):
// the fleet of three as on the dev server, against the Temporal server on
// PostgreSQL that internal/testkit/clustertest starts with deploy/'s configuration
// (4 history shards, SQL visibility; the one docker-compose.yml runs),
// the journal in the database agentrun on the same PostgreSQL, as in the
// compose file; the cluster starts with the first cluster trial:
//
//  14. server: the server process SIGKILLed while the chosen lookup runs,
//     kept down 2 s, and started again on the same ports and databases;
//  15. server-postgres: the server's PostgreSQL (and the journal's)
//     restarted while the chosen lookup runs, down 3 s.
//
// When the run waits for approval the campaign approves it (reconcile
// approve, or reconcile --local approve); when it is Indeterminate the
// campaign settles it from the ground truth, the trial's ticket file:
// done with the id of the ticket with the step's title when it exists,
// retry when it does not.
//
// Per trial it asserts: the run completes; exactly one ticket per
// create_ticket call of the script, and the answer names the last; every
// model step completed exactly once (on Temporal one
// ActivityTaskCompleted per llm/N in the history, locally one
// step.completed per llm/N in the journal); Indeterminate only at points 3,
// 4, 8, 9, 11 and 12, where the write's effect really was uncertain. A
// failed trial's tickets are counted too. A kill counts as a
// hit only when the process really was at the point: the hold's log line
// for the chosen step was seen (and, locally, the journal shows the step
// started and not completed), the activity was STARTED on the killed
// worker (or when the server or database went down), or, locally, the
// journal shows the timing described above.
//
// Kill points are dealt round-robin over the 30 cells (engine, point,
// settle mode: the kill points 1-7 on both engines, 13 locally, 14 and 15
// on the cluster, the five freeze and partition points in three modes
// each), then shuffled with a
// seeded RNG (printed at the start); by default 6 trials per cell (180).
// -points runs a subset (e.g. -points freeze-write-before,cut-temporal/key).
//
// It prints a table per engine, kill point and settle mode and writes it as
// the "## Crash campaign" section at the end of BENCHMARKS.md (or -out
// FILE), and exits non-zero when a trial fails an assertion or, in a
// campaign of at least 5 trials per cell, a cell got fewer than 5 hits.
package main
