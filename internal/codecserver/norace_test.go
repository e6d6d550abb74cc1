//go:build !race

package codecserver

// memScale widens the memory bounds of the tests under the race detector
// (race_test.go); without it they hold as they are.
const memScale = 1
