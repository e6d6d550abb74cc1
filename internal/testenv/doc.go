// Package testenv holds what the project's real-process tests share: the
// Temporal dev server of a test process (started through internal/devserver,
// so it runs with the project's dynamic config; its test proves it
// dispatches at full speed), building the programs once per test binary and
// waiting for conditions with a deadline. It is imported only by tests.
package testenv
