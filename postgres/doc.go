// Package postgres keeps agentrun's durable state in PostgreSQL, so that a
// fleet of workers on many hosts shares nothing but PostgreSQL and Temporal
// (DESIGN §5a). [Open] connects to a database by URL and returns a [DB]
// with four stores: Journal (the local engine's journals), Guard (the
// Temporal write guard's journals), Content (the content store) and Limits
// (the rate limits' pools). Each passes the conformance suite of its
// interface ([github.com/agentrun/agentrun/journal/storetest],
// [github.com/agentrun/agentrun/content/storetest],
// [github.com/agentrun/agentrun/ratelimit/storetest]).
//
// # Connection
//
// The URL is a libpq URL, postgres://user:password@host:port/database?...
// (or postgresql://), read by pgx: sslmode, connect_timeout,
// pool_max_conns and the other settings of pgx and pgxpool apply. Without
// connect_timeout, one attempt to connect gives up after 10 s. Errors and
// [DB.String] name the host, port, database and user, never the password
// ([Redact] masks it in a URL for logs).
//
// # Schema
//
// Four tables, created by Open:
//
//	agentrun_schema  (id boolean PRIMARY KEY, version integer)  one row: the schema version
//	agentrun_journal (journal text, run_id text, seq integer, record bytea,
//	                  PRIMARY KEY (journal, run_id, seq))
//	agentrun_content (key text PRIMARY KEY, data bytea)
//	agentrun_limits  (pool text PRIMARY KEY, state jsonb, updated timestamptz)
//
// A journal row is one record: journal is "local" or "temporal" (the
// journal folder and its "temporal" subfolder in the file layout), seq
// counts a run's records from 0 with no gaps, and record is the record's
// compact JSON exactly as a FileStore writes it after the checksum
// ([journal.EncodeSealed]: plain, or with payload keys sealed, its content
// encrypted; see package journal's Sealed records); PostgreSQL checksums its own pages and WAL, so no
// checksum is stored. A content row holds a blob's bytes under its key
// ("sha256:" and 64 hex digits). A limits row is one rate-limit pool: its
// [ratelimit.State] as JSON and when it last changed. Text columns use the "C" collation, so run
// ids sort as Go sorts strings.
//
// # Migrations
//
// Open brings the schema to [SchemaVersion] in one transaction that first
// takes a transaction-scoped advisory lock (pg_advisory_xact_lock), so
// workers that start at once migrate the database once: the others wait,
// then find it done. A migration is never changed once released; a new
// version appends one. A database whose schema version is newer than the
// code's is refused with a one-line error ("upgrade agentrun"), and nothing
// is changed.
//
// # Guarantees
//
// These hold when the server keeps its own promises: fsync on and
// synchronous_commit not off (the defaults). With synchronous_commit off,
// a committed transaction can be lost in a server crash; do not run
// agentrun that way.
//
// A journal Append is one INSERT statement (one transaction) that adds the
// records as seq seen, seen+1, ... only if the run holds exactly seen
// records. An Append that returned nil has committed: it survives a crash.
// One that returned an error wrapping [journal.ErrConflict] wrote nothing:
// the run held another number of records, or a concurrent Append took the
// same seq first (the primary key refuses the second of two, so of several
// appenders that saw the same count exactly one wins). [operator.ErrInvalid]
// (a bad run id, seen count or record) also means nothing was written. Any
// other error (a lost connection, a timeout, a failed commit) leaves the
// outcome unknown: all the records may be there or none (never some: the
// statement is atomic). Callers treat it as unknown, as with the file
// store: Load again and decide from what is there. A journal operation
// gives up after one minute (journal.Store has no context); an Append cut
// short that way is unknown too.
//
// Load returns a run's records in seq order; a gap in seq or a record that
// does not decode is damage from outside the store (a hand edit) and is
// refused with an error wrapping [journal.ErrCorrupt]. List returns the
// sorted ids of the runs with at least one record.
//
// The local engine's journal is a [journal.Locker]: while a process drives
// a run it holds a session-level advisory lock (pg_try_advisory_lock, keyed
// by a hash of the journal and the run id) on a connection of its own,
// whose application_name, "agentrun driver pid PID on HOST", names it to a
// second driver, which is refused with a [journal.BusyError] and writes
// nothing. The server releases the lock when that connection ends: when the
// process exits or dies, and also when the connection is lost mid-run
// (then a second driver can start while the first still runs its step).
// Before each step the driver asks pg_locks, on the lock's connection,
// whether its session still holds the lock (one round trip, bounded by 15
// seconds); when it does not, or the connection is gone, the driver stops
// before that step with a [journal.LockLostError].
//
// Every journal Append that inserts also NOTIFYs the journal's channel
// ("agentrun_journal_local", "agentrun_journal_temporal") with the run id
// as payload, in the same statement: PostgreSQL delivers it when the
// append commits, never for one that wrote nothing. [Journal.WatchRun]
// LISTENs on that channel on a connection of its own and wakes a
// following driver for its run's notifications; a failed listening
// connection wakes it too and is opened again every [ListenRetry] (1 s).
//
// A content Put inserts the blob unless its key holds it already (INSERT
// ... ON CONFLICT); a row holding other bytes under the key is damage and
// is replaced. A Put that returned nil has committed; one that returned an
// error may or may not have stored the blob, and may be retried. Get checks
// that the bytes hash to the key: it returns an error wrapping
// [content.ErrDamaged] when they do not, [content.ErrNotFound] when there is
// no row, and [content.ErrInvalidKey] for a malformed key, without a query.
// Both return the context's error when it is done before they start.
//
// A limits Update is one transaction: it inserts the pool's row if there
// is none (INSERT ... ON CONFLICT DO NOTHING), locks it (SELECT ... FOR
// UPDATE), calls fn and writes the state fn left, if fn changed it; fn's
// error rolls it back. The updates of a pool thus go one at a time across
// the fleet. A transaction waits at most 5 s for the row (SET LOCAL
// lock_timeout), so that a holder that froze mid-update (a stopped
// process, a cut network) blocks the others no longer than that: they get
// a one-line error naming the pool and the wait (the model call then
// fails as a network error, which its step retries). An Update gives up after 30 s in all.
// The state is not a durable record (package ratelimit's doc): losing a
// row costs at most a minute's pace.
package postgres
