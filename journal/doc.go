// Package journal records what a run did, so that a run can resume after a
// crash without redoing a step whose effect is unknown: the record format,
// the stores, and the write guard's decision table.
//
// A run's journal is an append-only list of [Record]s (run.started,
// step.started, step.completed, step.probed, signal, run.completed,
// run.cancelled, run.stopped); the state of a step is a fold over them
// ([FoldSteps]). A [Store] keeps the journals: [FileStore] on disk,
// [MemStore] in memory, and package [github.com/agentrun/agentrun/postgres]
// in PostgreSQL; every Store passes the conformance suite in
// [github.com/agentrun/agentrun/journal/storetest]. [Guard.RunStep]
// applies the decision table of DESIGN §4; the Temporal activities run
// their steps through it, and so does the local engine (package
// [github.com/agentrun/agentrun/local]), which drives runs over a Store and
// says what run.cancelled, run.stopped and the signal records do. How
// journals written by older builds are still read is in
// docs/compatibility.md, not here.
//
// Only a write step that is not idempotent records step.started, fsynced,
// before it runs: that record is what makes a crash inside the write
// Indeterminate rather than a second effect. A model or read step, or an
// idempotent write, is safe to run again: it records only step.completed,
// which carries its kind, once it returned, so it costs one append, and a
// crash inside it leaves nothing and the next run runs it again.
//
// A write may declare how it is settled without a person (agent.Settle: an
// idempotency key argument, a probe, or both); its step.started record says
// so ("settles": "key", "probe" or "key+probe"). When RunStep finds such a
// write started and not completed it settles it (see RunStep): a key runs
// it again with the same key; a probe (Guard.Probe) is asked first, and
// its answer is recorded in a step.probed record before anything else
// happens: found records the probe's result as completed, not found records
// a new step.started and runs the write again, unknown leaves it to a
// person (and to a key, when it has one). The result of a write settled
// this way carries agent.Settled, so nothing is settled silently. A
// probe-only write whose probe answered unknown is Indeterminate in the
// fold, like a write that declares nothing; the probe is not asked again.
//
// The run.started record of a fork (agent.Fork) carries "fork" ([Forked]):
// the origin run, the fork point and what the fork changes (agent, model,
// system prompt, replay), the point the engine read from the origin's record
// (agent.ForkPoint: the checkpoint the fork starts from, the origin's
// results it keeps past it, the model calls before it, the origin's writes
// at or after it and whether a person acknowledged them). Its input is the
// origin's, for people; the fork's own records hold only its live steps.
// Journals without it are runs of their own input, as before.
//
// A model step's step.completed record may carry the gating of the calls
// its reply asks for ("gates", by marker: allow, approval or deny; read or
// write), decided once when the model asked (Guard.RunGated).
//
// # The fence
//
// A write's step.started record written by [Guard.RunAttempt] carries the
// attempt that wrote it ([fence.Attempt]: generation, attempt number, worker, and
// its deadline, the start plus the tool's timeout). That attempt holds the
// step: it runs its tool only while it does (checked right before the tool
// runs: its deadline on its own clock, and one conditional store statement,
// an append of nothing after its start, that fails if anyone appended since;
// then, when other steps appended, its start must still be the step's
// newest), and its tool's context ends at the deadline. A later attempt that
// finds that start before the deadline plus [fence.Grace] (2 s) neither probes
// nor runs the write again: it gets a [*fence.Error] (the Temporal workflow
// waits on a timer, the local driver sleeps), or an [*IndeterminateError]
// naming the holder when only a person could settle it, whose retry
// [operator.CheckRetry] refuses until then; a write with an idempotency key runs
// again at once. A holder whose process certainly ended (same host name,
// pid namespace and boot id, pid gone: [fence.Attempt.Gone]) holds nothing; a
// holder from any other host, or from one whose identity is unknown, holds
// until its deadline. A start without an attempt ([Guard.RunStep]) holds
// nothing.
//
// # On-disk format
//
// A FileStore keeps one file per run, <dir>/<run id>.jsonl; a valid run id
// (see [operator.ValidRunID]) is a safe file name. The file is a sequence of lines,
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
// is an object that decodes into a Record (or a sealed one, below), and its
// type is one of the eight. Appends add whole lines at the end and never
// rewrite earlier ones.
//
// # Sealed records
//
// A store with a [Sealer] ([NewSealedFileStore], postgres.DB.SealedJournal
// and SealedGuard; the programs use package codec's Codec when payload keys
// are set) writes each record sealed: the same line, whose JSON holds the
// record's visible fields and a "sealed" member instead of the content:
//
//	<checksum> {"type":"step.completed","step":"llm/1","kind":"model","sealed":{"key":"k1","data":"YWdl..."}}
//
// The fields split so:
//
//   - Visible: type, step, kind, idempotent, settles, attempt (the fence's
//     generation, attempt, worker, deadline, host, pid) and at. The store
//     and a person reading the file without the key see what the run did,
//     when, and which step holds a write.
//   - Sealed: everything else (input, budget, session, result, gates,
//     probe, signal, stopped, answer, and any field added later).
//   - data is base64 of a sealed blob (package codec's format, with a random
//     nonce) of the record's whole plain JSON (EncodeJSON), under key id
//     key, the sealer's first key; its AAD is "agentrun journal record\n"
//     RUN "\n" N "\n" KEY, N being the record's 1-based position. A record
//     moved to another run or position, or whose visible fields no longer
//     match the sealed ones, fails to load with [ErrCorrupt].
//
// Keys rotate as payloads' do: new records are sealed under the first key,
// and a record opens under whichever configured key it names. Plain records
// (journals written without keys) read the same with or without keys, and a
// journal may mix both. A sealed record whose key is not configured is a
// [*KeyError] naming the run, the record and the key id: nothing of the run
// is returned, and it is neither a torn tail nor corruption, so nothing is
// truncated or appended.
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
// # Reading only what is new
//
// A FileStore remembers, for the 64 runs it used most recently, the good
// prefix of the run's file that it has read and checked: the file's
// identity (device and inode, from fstat), the prefix's length, its
// records, and the offset and checksum of its last line. Every Load and
// Append still takes the lock and fstats the open file; when the file is
// the same one, at least as long as the prefix, and still has that
// checksum at that offset, it reads only the bytes past the prefix (the
// records other processes appended since, or a torn tail) and scans them as
// a continuation of the file, so a bad line among them is reported with its
// line number and byte offset in the file. Otherwise (the file was replaced,
// cut below the prefix or rewritten in place) it reads the file from the
// start. So an Append or a Load costs the new bytes, not the file.
//
// This is sound under the crash assumptions: a good prefix is made of whole
// lines, and while the processes that share a directory run, those bytes
// never change: appends add bytes after them, a truncation removes only a
// torn tail past a good prefix, and a crash ends the processes, and with
// them what they remembered. What the store remembers is only ever a prefix
// it read and checked under the lock (or wrote and fsynced), and after any
// error from a read, write, fsync or truncate, and after finding a journal
// corrupt, it forgets the run and reads the whole file again next time.
// Changes from outside the crash assumptions are seen only in part: a
// person who edits lines a process has already checked, without making the
// file shorter or changing its last checked line, is not seen by that
// process until it forgets the run (a new process reads everything); stop
// the processes that use a journal before repairing it by hand. Likewise a
// disk that fails an fsync may later lose bytes that a process already
// counted; such a disk must be replaced, not trusted.
//
// # Driver locks and watches
//
// A [Locker] store gives one driver at a time a run's lock ([Lock]); a
// second one gets a [*BusyError] (wrapping [ErrBusy]) naming the holder's
// pid. A FileStore's lock is an exclusive flock(2) on <dir>/<run id>.lock,
// beside the journal, which holds the pid of its latest holder; the kernel
// releases it when the process ends, however it ends, and the file is
// never removed (removing it would race with a process opening it). A
// lock can be lost while its process lives when it lives on a database
// connection (the PostgreSQL store's): [Lock.Held] says so, and a driver
// that finds it lost returns a [*LockLostError] (wrapping [ErrLockLost]).
// A flock lasts as long as its process, so a FileStore's Held checks
// nothing. A lock that is a [FollowMarker] tells others its driver follows
// the run: a FileStore's lock file says "PID follow", a PostgreSQL lock's
// connection calls itself "agentrun follower pid PID on HOST"; a second
// driver's BusyError says Follows.
//
// A [Watcher] store wakes whoever waits on a run's journal ([Watch]) when
// a record lands; no loop polls the journal where the store notifies:
//
//   - A FileStore's Watch is a file-system notification on the run's file
//     (fsnotify: inotify on Linux, kqueue elsewhere), which fires as the
//     append writes; where none is available it looks at the file's size
//     and time every [WatchPoll] (1 s).
//   - The PostgreSQL store NOTIFYs the journal's channel with the run id
//     in the append's own statement, delivered when it commits; its Watch
//     LISTENs on a connection of its own, reconnecting after a failure.
//   - A Store that is not a Watcher (MemStore) is looked at every
//     WatchPoll ([PollWatch]).
//
// [WakeBound] (2 s) bounds how late a waiter wakes after an append
// returned, on every store; notifications make it milliseconds.
//
// # Guarantees
//
// An append that returned nil survives a crash: its bytes were written in
// one write call and fsynced, and when it put the first record in a file,
// the directory was fsynced before.
//
// An append that returned an error may or may not have happened. Only
// [ErrConflict], [operator.ErrInvalid], [ErrCorrupt] and a [*KeyError] mean that nothing was
// written.
// After any other error (a failed write or fsync, for instance) the records
// may be absent, present, or, for an append of several records, present in
// part (a prefix): a record that reached the file before an fsync failed
// shows up in the next Load even though it may not survive a crash. Callers
// must treat such an error as "unknown": Load again and decide from what is
// there, never assume the append did not happen. The store helps: it trusts
// nothing it did not verify, and after an error it rescans: it forgets what
// it knew of the run, so the next call reads the whole file from disk and
// sees what that error left.
package journal
