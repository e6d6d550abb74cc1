package fromenv

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/ratelimit"
)

// The stores AGENTRUN_JOURNAL names: a folder, or a PostgreSQL database
// (package postgres), each sealed with the codec when one is set.

// GuardDir is the folder of the write guard's journal under the journal
// folder: <AGENTRUN_JOURNAL>/temporal. It means nothing when
// AGENTRUN_JOURNAL is a PostgreSQL URL (see GuardStore).
func GuardDir(c config.Config) string { return filepath.Join(c.Journal, "temporal") }

// ContentDir is the content store's folder: <AGENTRUN_JOURNAL>/content.
// It means nothing when AGENTRUN_JOURNAL is a PostgreSQL URL.
func ContentDir(c config.Config) string { return filepath.Join(c.Journal, "content") }

// LimitDir is the folder of the rate limits' shared state under the
// journal folder: <AGENTRUN_JOURNAL>/limits.
func LimitDir(c config.Config) string { return filepath.Join(c.Journal, "limits") }

// IsPostgresURL reports whether an AGENTRUN_JOURNAL value names a
// PostgreSQL database rather than a folder.
func IsPostgresURL(v string) bool {
	return strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}

// openTimeout bounds connecting to PostgreSQL and migrating its schema when
// a store is first opened (the migration may wait for another process's).
const openTimeout = time.Minute

var (
	dbMu sync.Mutex
	dbs  = map[string]*postgres.DB{} // by URL: one pool per database and process
)

// database is the one place that decides between a folder and PostgreSQL:
// it returns nil when AGENTRUN_JOURNAL is a folder, and otherwise the
// process's pool for the URL, opened (and the schema migrated) on first
// use. The pool lives as long as the process: the programs are its only
// users, and exiting closes its connections.
func database(ctx context.Context, c config.Config) (*postgres.DB, error) {
	if !IsPostgresURL(c.Journal) {
		return nil, nil
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	if db := dbs[c.Journal]; db != nil {
		return db, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, c.Journal)
	if err != nil {
		return nil, fmt.Errorf("AGENTRUN_JOURNAL: %w", err)
	}
	dbs[c.Journal] = db
	return db, nil
}

// JournalStore opens the local engine's journal store: the folder, or the
// database's local journal. With a codec key set (Config.Codec), it keeps
// records' content encrypted at rest.
func JournalStore(ctx context.Context, c config.Config) (journal.Store, error) {
	db, err := database(ctx, c)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.SealedJournal(recordSealer(c)), nil
	}
	return journal.NewSealedFileStore(c.Journal, recordSealer(c))
}

// GuardStore opens the write guard's journal store of a Temporal worker:
// the folder's "temporal" subfolder (GuardDir), or the database's guard
// journal, sealed as JournalStore's. It returns where that is, for logs.
func GuardStore(ctx context.Context, c config.Config, logger *slog.Logger) (journal.Store, string, error) {
	db, err := database(ctx, c)
	switch {
	case err != nil:
		return nil, "", err
	case db != nil:
		return db.SealedGuard(recordSealer(c)), db.String(), nil
	}
	store, err := journal.NewSealedFileStore(GuardDir(c), recordSealer(c))
	if err != nil {
		return nil, "", err
	}
	store.Logger = logger
	return store, GuardDir(c), nil
}

// Content opens the content store: the folder's "content" subfolder, or
// the database's content table. With a codec key set (Config.Codec), it
// keeps blobs encrypted at rest.
func Content(ctx context.Context, c config.Config) (content.Store, error) {
	db, err := database(ctx, c)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.SealedContent(sealer(c)), nil
	}
	return content.NewSealedFileStore(ContentDir(c), sealer(c))
}

// LimitStore opens the rate limits' store: the folder's "limits"
// subfolder (LimitDir), which the workers and local runs of one host
// share, or the database's agentrun_limits table (through the process's
// one pool of the URL, as the journals and content), which a fleet on many
// hosts shares.
func LimitStore(ctx context.Context, c config.Config) (ratelimit.Store, error) {
	db, err := database(ctx, c)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.Limits(), nil
	}
	return ratelimit.NewFileStore(LimitDir(c))
}

// sealer is the content store's Sealer: the codec, or nil (not a nil
// *codec.Codec in an interface) when none is set.
func sealer(c config.Config) content.Sealer {
	if c.Codec == nil {
		return nil
	}
	return c.Codec
}

// recordSealer is the journal stores' Sealer: the codec, or nil.
func recordSealer(c config.Config) journal.Sealer {
	if c.Codec == nil {
		return nil
	}
	return c.Codec
}
