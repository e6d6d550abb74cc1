// Package testenv holds what the project's real-process tests share:
// building the programs once per test binary and waiting for conditions
// with a deadline. It is imported only by tests.
package testenv
