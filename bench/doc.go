// Command bench measures agentrun's costs against baselines measured in the
// same run, and writes one Markdown table, with the machine it ran on, to
// BENCHMARKS.md (overwritten) and to stdout. Run it with `make bench` or
// `go run ./bench` from the module root.
//
// It starts its own Temporal dev server from the pinned CLI
// ($AGENTRUN_TEMPORAL_CLI or bin/temporal; internal/devserver: in memory,
// headless, agentrun's search attributes, and the dynamic config every dev
// server of the project runs with), and runs its workers in its own
// process. Its sections:
//
//   - Step overhead: AgentRun (package workflows and activities, the
//     scripted model, the demo tools, the write guard on a FileStore) on a
//     script of T turns that each call the read tool lookup, then answer,
//     against a bare workflow that runs the same number of no-op activities
//     one after another. Runs alternate (bare, AgentRun, ...) after one
//     warm-up run of each; the figure is the median of the runs' wall time
//     per activity. Where the time goes: the median gaps between the
//     history events of every measured run (activity scheduled → started →
//     completed → workflow task scheduled → started → completed → next
//     activity scheduled), both sides, and each worker's RPCs per activity,
//     counted by a gRPC interceptor on its own client.
//   - Local journal: journal.FileStore.Append of a step.completed record
//     into runs already holding 10 and 4,000 records, interleaved with a
//     raw write+fsync of the same bytes to an O_APPEND file in the same
//     folder; and, once the store keeps counters (statsOf), the bytes read
//     per append and the fsyncs per step of each kind.
//   - Long run: a stub (longRun) until the content store lands.
//
// Each row is a figure, its baseline, their ratio and the goal for the
// ratio. A missed goal is marked ✗ and listed under the table; the bench
// measures and exits 0 anyway (1 on an error, 3 when the dev server cannot
// start).
//
// Flags: -quick (a smoke run of a few seconds; bench_test.go runs it),
// -out FILE, -dir DIR (where journals and fsync probes go; default a
// temporary folder), -cpuprofile FILE (the workers' CPU during the step
// overhead section, for go tool pprof).
//
// newAgentWorker is the one place that builds AgentRun's worker: adapt it
// when the workflow or activities APIs change.
package main
