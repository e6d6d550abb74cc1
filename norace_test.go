//go:build !race

package agentrun_test

const raceEnabled = false
