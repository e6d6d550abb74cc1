//go:build race

package local_test

// raceEnabled: the test binary runs under the race detector, which slows
// the engine several times over; timed bounds widen by raceSlowdown.
const raceEnabled = true
