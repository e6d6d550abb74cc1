//go:build race

package testenv

// raceEnabled: the test binary runs under the race detector, which slows
// the in-process worker several times over.
const raceEnabled = true
