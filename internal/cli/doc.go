// Package cli holds what the starter and reconcile programs do, so that
// their mains stay thin: parse arguments, run against the local journal or
// a Temporal cluster, print for people, and map outcomes to exit codes.
// Every command they print works when pasted where it was printed: see
// [Commands]. What unblocks a run is printed by one function for both
// engines (the starter's outcome, --wait, reconcile show). Everything they
// print goes through one terminal writer (termsafe.go), which escapes the
// control characters of the model's and tools' text, streamed text too.
//
// Each reconcile command is written once (operate, runs.go) over the runs
// interface, which both engines implement: *Remote on a Temporal cluster
// (remote_runs.go, remote_update.go), *Local over the local journal
// (local.go, the one file that calls the local engine). The digest an
// approve or deny without --digest is pinned to is filled there, from the
// arguments pending now; an unknown or ended run is refused by the
// engine's admit (on Temporal) or in the append that would record the
// input (locally). --wait and message --wait on Temporal are one polling
// loop (watch.go).
//
// Settings (settings.go) are what the programs run with: the configuration
// their main loaded once (internal/config, the one reader of the
// environment) and how to name the programs in printed commands; they open
// the stores. The executor and the worker's agentrun.Config are built from
// the configuration by package fromenv, and the worker (worker.go)
// registers through agentrun.Register, as a team's worker does; what it
// adds is the process around it: the metrics endpoint, the tracing
// exporter, dialing Temporal and the worker's options.
//
// Exit codes: 0 Completed (or an operator command that succeeded), 1 an
// error or a Failed run, 2 a usage error or a setting that cannot be used
// (a *config.Error, one line naming the variable), 3 AwaitingApproval, 4
// Indeterminate, 5 busy: another process drives the run (the local engine
// holds one driver lock per run; nothing was written), or the driver lost
// its lock (its PostgreSQL connection ended) and stopped before its next
// step, 6 Cancelled, 7 BudgetExceeded, 8 stopped: the local driver gave up
// on a model call or read that failed on every attempt (or with an error
// that trying again cannot mend); the run's journal says why and
// starter --local --id RUN resumes it (ExitStopped).
//
// The local driver prints each retry of a failing step as one line
// (local.Retrying), with the policy of Settings.LocalRetry: the
// engines' execute.StepRetry with the attempts and first wait of
// AGENTRUN_LOCAL_ATTEMPTS and AGENTRUN_LOCAL_RETRY_INTERVAL.
package cli
