package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The names of the two journals in the journal column.
const (
	localJournal = "local"
	guardJournal = "temporal"
)

// migrations are the schema's versions: migrations[i] takes the schema from
// version i to i+1. Append new ones; never change a released one.
var migrations = []string{
	// Version 1: journals and content.
	`CREATE TABLE agentrun_journal (
		journal text COLLATE "C" NOT NULL,
		run_id  text COLLATE "C" NOT NULL,
		seq     integer NOT NULL CHECK (seq >= 0),
		record  bytea NOT NULL,
		PRIMARY KEY (journal, run_id, seq)
	);
	CREATE TABLE agentrun_content (
		key  text COLLATE "C" PRIMARY KEY,
		data bytea NOT NULL
	);`,
	// Version 2: the rate limits' pools.
	`CREATE TABLE agentrun_limits (
		pool    text COLLATE "C" PRIMARY KEY,
		state   jsonb NOT NULL,
		updated timestamptz NOT NULL DEFAULT now()
	);`,
}

// SchemaVersion is the schema version this code creates and understands.
var SchemaVersion = len(migrations)

// migrationLock is the key of the transaction-scoped advisory lock that
// serializes migrations: "agentrun" in ASCII.
const migrationLock int64 = 0x6167656e7472756e

// migrate brings the schema to SchemaVersion in one transaction, under the
// advisory lock, so that processes opening a database at once migrate it
// once and each sees the whole result.
func (db *DB) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS agentrun_schema (
			id      boolean PRIMARY KEY DEFAULT true CHECK (id),
			version integer NOT NULL
		)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var version int
		err := tx.QueryRow(ctx, `SELECT version FROM agentrun_schema`).Scan(&version)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("migrate: read the schema version: %w", err)
		}
		if version > SchemaVersion {
			return fmt.Errorf("schema version %d is newer than this agentrun knows (%d): upgrade agentrun", version, SchemaVersion)
		}
		for v := version; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		if version < SchemaVersion {
			if _, err := tx.Exec(ctx, `INSERT INTO agentrun_schema (version) VALUES ($1)
				ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, SchemaVersion); err != nil {
				return fmt.Errorf("migrate: record schema version %d: %w", SchemaVersion, err)
			}
		}
		return nil
	})
}
