// Package testenv holds what the project's tests, the bench and the chaos
// campaign share, so that none of them keeps a copy:
//
//   - the Temporal dev server of a test process (started through
//     internal/testkit/devserver, so it runs with the project's dynamic config; its
//     test proves it dispatches at full speed), and one of a test's own with
//     other options (DevServerWith: e.g. the Web UI and its codec endpoint);
//   - building the programs (Program once per test binary, Build for the
//     bench and the campaign);
//   - the one child-process harness (Proc: Launch, LaunchCmd and
//     StartWorker for programs and the other harnesses, Start and Run for
//     tests, which kill what is left at cleanup), and waiting for conditions with a deadline (WaitFor);
//   - the hand example's fixtures that need the programs (its prompt and
//     step names are internal/testkit/hand's, which any package's tests
//     can import): counting the tickets it filed, the tools files and probes of the
//     settle tests, and crashing a process at a test hook's hold point
//     (CrashInTicket);
//   - the tests' own model provider as a process (ProviderFake for tests,
//     LaunchProviderFake for the bench: internal/testkit/providerfake);
//   - the npm packages of the tests that run node;
//   - running a suite with encryption on (SuiteKeys, make test-encrypted):
//     the shared client's codec, the converter that reads a history's
//     payloads in either mode (SuiteConverter), and a codec endpoint for
//     the temporal CLI (CodecEndpoint).
//
// It is imported only by tests and by the bench and chaos programs.
package testenv
