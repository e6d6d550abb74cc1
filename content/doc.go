// Package content keeps immutable blobs by the hash of their bytes, so that
// a run can carry a short reference instead of a bulky value (message text,
// tool arguments, tool results above about 1 KiB).
//
// A [Store] has two operations: Put stores bytes and returns their key, Get
// returns the bytes stored under a key. [FileStore] keeps blobs on disk,
// [MemStore] in memory; [Counting] wraps any Store and counts what goes
// through it; package [github.com/agentrun/agentrun/postgres] keeps blobs
// in PostgreSQL. Every backend passes the conformance suite in
// [github.com/agentrun/agentrun/content/storetest].
//
// # Keys
//
// The key of a blob is "sha256:" followed by the 64 lowercase hex digits of
// the SHA-256 of its bytes (see [KeyOf]), for example
//
//	sha256:09ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b
//
// for the bytes "hello, world". Equal bytes have equal keys, so storing a
// value twice stores it once, and a key names exactly one value: a reader
// can check what it got. [ValidKey] accepts nothing else, so a valid key is
// a safe file name and cannot reach outside the store's directory.
//
// # Encryption at rest
//
// With a [Sealer] ([NewSealedFileStore], postgres.DB.SealedContent; the
// programs use package codec's Codec when a key is configured), a store
// keeps each blob sealed: encrypted and authenticated, beginning with
// [SealedMagic] (the format is in package codec's doc). The key is still
// computed over the plaintext, so references already in histories and
// journals stay valid, equal values are still stored once, and a store
// with a sealer reads blobs kept plain (stored bytes that hash to their
// key) as well: turning encryption on needs no migration, and blobs
// written before stay plain until they are put again. [Unseal] is the read
// rule every backend shares.
//
// What the address reveals: it is the SHA-256 of the plaintext, and it is
// in plain sight (file names, the key column, and, in plain runs,
// histories). Whoever sees it learns the blob's identity, not its text:
// that two runs stored the same value, and, for a guessed value (a known
// document, a short answer), whether the guess is right, by hashing it.
// Sealed bytes are equal for equal blobs under one key (the nonce is
// derived from the key and the address), which reveals nothing the
// address does not already.
//
// # On-disk format
//
// A FileStore keeps each blob in its own file, sharded by the first two hex
// digits of its key:
//
//	<dir>/<hex digits 1-2>/<hex digits 3-64>
//
// The file holds exactly the blob's bytes, or with a Sealer its sealed
// bytes, nothing else (no header, no checksum: the key is the checksum of
// the plaintext). Files are created 0600 and directories
// 0700, since blobs hold prompts and tool output. While a Put writes, the
// bytes sit in a temporary file in the shard directory whose name begins
// with ".tmp-"; no key maps to such a name, so it is never read as a blob.
//
// A Put whose file already holds its bytes writes nothing. Otherwise it
// writes the bytes to a new temporary file, fsyncs it, closes it and
// renames it onto the blob's name, then fsyncs the shard directory. The
// first Put into a shard by a FileStore creates the shard directory if
// needed and fsyncs the store's directory, so that the shard's entry is
// durable too; later Puts into that shard skip this.
//
// # Crash assumptions
//
//   - fsync(2) of a file makes the bytes written to it durable; fsync of a
//     directory makes its entries (a created or renamed file) durable.
//     Anything not fsynced may be lost after a crash.
//   - rename(2) within a directory is atomic, also after a crash: the name
//     refers to the old file (or none) or to the new one, never to a mix.
//   - Processes that share a directory see each other's renames at once (a
//     local file system, or one with local semantics; not NFS).
//
// From these, a blob file only ever holds the complete bytes of its blob:
// its bytes were durable before its name was. A crash can leave temporary
// files behind; they hold no blob, Get never reads them, and a person may
// delete any that are older than the longest Put.
//
// Get does not rely on these assumptions: it hashes what it read and
// returns an error wrapping [ErrDamaged] when the hash is not the key. A
// torn or damaged file (a disk error, a hand edit, a partial copy, a file
// system that does not keep its promises) is therefore never returned as
// content. The next Put of the right bytes replaces it, atomically.
//
// # Guarantees
//
// A Put that returned nil survives a crash: the blob's bytes were fsynced
// before the rename, and the shard directory, and the shard's entry in the
// store's directory, were fsynced after it. This holds also when the blob
// was already there, put by this process or another one: such a Put
// compares the file with its bytes and fsyncs the shard directory before
// returning nil, so it never reports a blob that a crash could still undo.
//
// A Put that returned an error may or may not have stored the blob. Either
// way, Get returns the right bytes or an error, never other bytes, and
// putting the same bytes again is safe: retry the Put.
//
// Get returns the bytes stored under a key, an error wrapping [ErrNotFound]
// when there are none, one wrapping [ErrDamaged] when the file does not
// hold them, and one wrapping [ErrInvalidKey] for a malformed key (without
// touching the file system). Errors name the key.
//
// Both operations return ctx.Err() when the context is already done, before
// doing any I/O. Once a FileStore's Put has started writing it finishes
// (file I/O cannot be interrupted), so cancelling it mid-way leaves no half
// of anything.
//
// A FileStore is safe for concurrent use by goroutines and by processes
// sharing its directory: every writer renames complete, identical bytes
// onto a blob's name, so the last rename wins and all of them are right.
package content
