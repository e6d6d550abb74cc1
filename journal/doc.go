// Package journal records what a run did, so that a run can resume after a
// crash without redoing a step whose effect is unknown.
//
// A run's journal is an append-only list of [Record]s (run.started,
// step.started, step.completed, signal, run.completed); the state of a run
// is a fold over them. A [Store] keeps the journals: [FileStore] on disk,
// [MemStore] in memory. Journal.RunStep applies the decision table of
// DESIGN §4; Run and Signal drive the agent loop over a Store.
//
// # On-disk format
//
// A FileStore keeps one file per run, <dir>/<run id>.jsonl; a valid run id
// (see [ValidRunID]) is a safe file name. The file is a sequence of lines,
// one record per line, each written as
//
//	<checksum> <json>\n
//
// where <json> is the compact JSON encoding of the Record (JSON escapes
// newlines, so it holds none) and <checksum> is the CRC-32C (Castagnoli) of
// exactly the <json> bytes, as 8 lowercase hex digits, followed by one
// space. For example:
//
//	23abd875 {"type":"run.started","input":[{"role":"user","content":"hello"}]}
//
// A line is good when it ends with a newline, its checksum matches, its JSON
// is an object that decodes into a Record, and its type is one of the five.
// Appends add whole lines at the end and never rewrite earlier ones.
//
// # Crash assumptions
//
//   - fsync(2) of a file makes the bytes written to it, and its size,
//     durable; fsync of a directory makes its entries (a new file) durable.
//     Bytes written and not yet fsynced may be lost after a crash.
//   - A crash or a failed write during an append damages only the end of
//     the file: it leaves some prefix of the appended bytes, possibly
//     followed by garbage or zeros. Bytes covered by an earlier successful
//     fsync are not changed.
//   - Processes that share a directory run on one machine, on a local file
//     system where flock(2) works (not NFS). Each Append holds an exclusive
//     flock on the run's file from its read to its fsync; Load holds a
//     shared one.
//
// From these, a torn tail (the final line has no newline or is bad, with no
// good line after it) is the remains of an append that never returned nil:
// Load ignores it, and the next Append truncates it (ftruncate, fsync) and
// logs how many bytes it dropped. A bad line followed by a good line is not
// a crash pattern under these assumptions: it is corruption, and Load and
// Append refuse the journal with an error wrapping [ErrCorrupt] that names
// the file, the 1-based line number and the byte offset of the first bad
// line; nothing more is appended until a person repairs the file. Such
// damage comes from outside the store (a disk error, a hand edit), or from a
// crash that persisted an unsynced write out of order, in which case the bad
// line and all after it belong to an append that never returned nil.
//
// # Guarantees
//
// An append that returned nil survives a crash: its bytes were written in
// one write call and fsynced, and when it put the first record in a file,
// the directory was fsynced before.
//
// An append that returned an error may or may not have happened. Only
// [ErrConflict], [ErrInvalid] and [ErrCorrupt] mean that nothing was written.
// After any other error (a failed write or fsync, for instance) the records
// may be absent, present, or, for an append of several records, present in
// part (a prefix): a record that reached the file before an fsync failed
// shows up in the next Load even though it may not survive a crash. Callers
// must treat such an error as "unknown": Load again and decide from what is
// there, never assume the append did not happen. The store helps by
// caching nothing: every Load and Append reads the file from disk, so the
// call after an error sees what that error left.
package journal
