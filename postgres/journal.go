package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// Journal is a journal.Store in PostgreSQL: one row per record, keyed by
// (journal, run id, seq), seq counting a run's records from 0.
type Journal struct {
	db     *DB
	name   string         // localJournal or guardJournal
	sealer journal.Sealer // seals records' content at rest; nil: plain
}

var _ journal.Store = (*Journal)(nil)

// Load returns the records of a run in seq order; an unknown run has none.
func (j *Journal) Load(runID string) ([]journal.Record, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	ctx, cancel := opContext()
	defer cancel()
	rows, err := j.db.pool.Query(ctx, `SELECT seq, record FROM agentrun_journal
		WHERE journal = $1 AND run_id = $2 ORDER BY seq`, j.name, runID)
	if err != nil {
		return nil, fmt.Errorf("load %s: %s: %w", runID, j.db.target, err)
	}
	defer rows.Close()
	var recs []journal.Record
	for rows.Next() {
		var seq int
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, fmt.Errorf("load %s: %s: %w", runID, j.db.target, err)
		}
		if seq != len(recs) { // appends keep seq dense; a gap is damage from outside
			return nil, fmt.Errorf("load %s: record %d is missing (next is %d): %w", runID, len(recs), seq, journal.ErrCorrupt)
		}
		rec, err := journal.DecodeSealed(j.sealer, runID, seq+1, data)
		var ke *journal.KeyError
		if errors.As(err, &ke) {
			return nil, ke // it names the run
		}
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", runID, err)
		}
		recs = append(recs, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %s: %w", runID, j.db.target, err)
	}
	return recs, nil
}

// Append inserts recs as records seen, seen+1, ... of the run, in one
// statement (one transaction), if the run holds exactly seen records. It
// returns an error wrapping journal.ErrConflict, having written nothing,
// when it holds another number, or when a concurrent append took one of
// those seq first (the primary key refuses the second). Any other error
// leaves the outcome unknown: the records may be there, all of them, or
// not at all (never in part: the statement is atomic).
func (j *Journal) Append(runID string, seen int, recs ...journal.Record) error {
	if err := operator.ValidRunID(runID); err != nil {
		return err
	}
	if seen < 0 {
		return fmt.Errorf("append %s: %w seen count %d: it is negative", runID, operator.ErrInvalid, seen)
	}
	data := make([][]byte, 0, len(recs))
	for i, rec := range recs {
		b, err := journal.EncodeSealed(j.sealer, runID, seen+i+1, rec)
		if err != nil {
			return fmt.Errorf("append %s: record %d: %w", runID, i+1, err)
		}
		data = append(data, b)
	}
	ctx, cancel := opContext()
	defer cancel()
	if len(data) == 0 {
		have, err := j.count(runID)
		if err != nil {
			return fmt.Errorf("append %s: %s: %w", runID, j.db.target, err)
		}
		return checkSeen(runID, have, seen)
	}
	// The WHERE makes the append conditional on the count read in the same
	// statement; two appenders that both read seen insert the same seq, and
	// the primary key makes the second fail once the first commits.
	// The same statement NOTIFYs the journal's channel with the run id when
	// it inserted: PostgreSQL delivers it to the listeners (a following
	// driver, WatchRun) when the append commits, and never when it does not.
	var inserted int64
	err := j.db.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO agentrun_journal (journal, run_id, seq, record)
		SELECT $1, $2, $3 + t.ord - 1, t.rec FROM unnest($4::bytea[]) WITH ORDINALITY AS t(rec, ord)
		WHERE (SELECT coalesce(max(seq) + 1, 0) FROM agentrun_journal WHERE journal = $1 AND run_id = $2) = $3
		RETURNING 1), n AS (SELECT count(*) AS c FROM ins)
		SELECT c, CASE WHEN c > 0 THEN pg_notify($5, $2)::text END FROM n`,
		j.name, runID, seen, data, channel(j.name)).Scan(&inserted, new(*string))
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("append %s: a concurrent append took record %d first, caller saw %d: %w", runID, seen, seen, journal.ErrConflict)
	case err != nil:
		return fmt.Errorf("append %s: %s: outcome unknown: %w", runID, j.db.target, err)
	case inserted == int64(len(data)):
		return nil
	case inserted != 0: // cannot happen: one statement inserts all rows or none
		return fmt.Errorf("append %s: %s: inserted %d of %d records", runID, j.db.target, inserted, len(data))
	}
	have, err := j.count(runID)
	if err != nil {
		return fmt.Errorf("append %s: journal does not hold %d records (caller saw %d): %w", runID, seen, seen, journal.ErrConflict)
	}
	if have == seen { // it grew to seen after the insert looked; still, nothing was written
		return fmt.Errorf("append %s: journal changed while appending, caller saw %d: %w", runID, seen, journal.ErrConflict)
	}
	return checkSeen(runID, have, seen)
}

// count returns how many records the run holds.
func (j *Journal) count(runID string) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	var n int
	err := j.db.pool.QueryRow(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM agentrun_journal
		WHERE journal = $1 AND run_id = $2`, j.name, runID).Scan(&n)
	return n, err
}

// checkSeen returns ErrConflict, worded like the file store's, when the
// journal holds another number of records than the caller saw.
func checkSeen(runID string, have, seen int) error {
	if have == seen {
		return nil
	}
	return fmt.Errorf("append %s: journal holds %d records, caller saw %d: %w", runID, have, seen, journal.ErrConflict)
}

// List returns the ids of the runs with at least one record, sorted by
// their bytes (as Go sorts strings).
func (j *Journal) List() ([]string, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := j.db.pool.Query(ctx, `SELECT run_id FROM agentrun_journal
		WHERE journal = $1 AND seq = 0 ORDER BY run_id COLLATE "C"`, j.name)
	if err != nil {
		return nil, fmt.Errorf("list: %s: %w", j.db.target, err)
	}
	ids, err := pgxCollectStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("list: %s: %w", j.db.target, err)
	}
	return ids, nil
}

// pgxCollectStrings reads one text column of every row.
func pgxCollectStrings(rows pgx.Rows) ([]string, error) {
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
