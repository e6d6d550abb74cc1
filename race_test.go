//go:build race

package agentrun_test

// raceEnabled: the test binary runs under the race detector, which slows
// the worker several times over; timed bounds widen by raceSlowdown.
const raceEnabled = true
