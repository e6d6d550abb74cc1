// Package fence is the write fence: which attempt of a guarded write holds
// its step, until when, and whether its process certainly ended.
//
// An [Attempt] (generation, attempt number, worker, deadline, host and
// pid) is recorded in a write's step.started record; the attempt of the
// step's newest start holds the step until its deadline plus [Grace]. A
// later attempt that finds the step held neither probes nor runs the write
// again: it gets an [*Error] (unwrapping to [ErrFenced]) saying who holds
// it and until when. A holder whose process certainly ended on this host
// ([Attempt.Gone]: same host name, pid namespace and boot id, pid not a
// live process) holds nothing; a holder from any other host, or one whose
// identity is unknown, holds until its deadline.
//
// The write guard (package journal) records and checks the fence; the
// local engine and the Temporal workflow wait on it; neither needs more of
// the other than this package.
package fence
