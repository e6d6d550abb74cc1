// Package testkit holds the two rules every test harness of agentrun
// shares, so that each is written once; the harnesses themselves are its
// subpackages, one job each: testenv (the programs as child processes, the
// hand example's fixtures that need them), hand (its prompt and step
// names, for any package's tests), devserver, clustertest, pgtest,
// jaegertest, mcptest and netfault.
//
//   - A test that needs something this machine lacks (a Temporal server,
//     PostgreSQL, Jaeger, Chromium, node packages) fails under CI=true, where
//     .ci/run must have installed and started it, and is skipped elsewhere,
//     saying so ([Unavailable]).
//   - The pinned programs the Makefile builds live in bin/ at the module
//     root ([Root], [Bin]).
package testkit
