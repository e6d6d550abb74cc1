//go:build race

package mcp

// memScale widens the memory bounds of the tests under the race detector,
// whose builds allocate more and whose shadow memory counts in the RSS;
// make test checks them at scale 1, and a bound three times wider still
// fails an unbounded read (gigabytes before the bounds).
const memScale = 3
