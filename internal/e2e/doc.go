// Package e2e holds the end-to-end tests: real worker processes against a
// real Temporal dev server, driven with the real temporal CLI, and killed
// with SIGKILL where a test says so. It has no code besides its tests.
package e2e
