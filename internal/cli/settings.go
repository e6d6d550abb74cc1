package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/fromenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/ratelimit"
)

// Settings are what the programs run with: their configuration, loaded
// once by their main (config.Load), and the names of the programs for the
// commands they print.
type Settings struct {
	config.Config
	// Commands name the programs in the commands printed for a person.
	// Not read from the environment: the mains set it from os.Args[0]
	// (CommandsFor). Zero: the bare names, as on a PATH.
	Commands Commands
}

// ContentDir is the content store's folder: <AGENTRUN_JOURNAL>/content.
// It means nothing when AGENTRUN_JOURNAL is a PostgreSQL URL.
func (s Settings) ContentDir() string { return filepath.Join(s.Journal, "content") }

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
func (s Settings) database(ctx context.Context) (*postgres.DB, error) {
	if !IsPostgresURL(s.Journal) {
		return nil, nil
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	if db := dbs[s.Journal]; db != nil {
		return db, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, s.Journal)
	if err != nil {
		return nil, fmt.Errorf("AGENTRUN_JOURNAL: %w", err)
	}
	dbs[s.Journal] = db
	return db, nil
}

// JournalStore opens the local engine's journal store: the folder, or the
// database's local journal. With a codec key set (Config.Codec), it keeps
// records' content encrypted at rest.
func (s Settings) JournalStore(ctx context.Context) (journal.Store, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.SealedJournal(s.recordSealer()), nil
	}
	return journal.NewSealedFileStore(s.Journal, s.recordSealer())
}

// GuardStore opens the write guard's journal store of a Temporal worker:
// the folder's "temporal" subfolder (GuardDir), or the database's guard
// journal, sealed as JournalStore's. It returns where that is, for logs.
func (s Settings) GuardStore(ctx context.Context, logger *slog.Logger) (journal.Store, string, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, "", err
	case db != nil:
		return db.SealedGuard(s.recordSealer()), db.String(), nil
	}
	store, err := journal.NewSealedFileStore(GuardDir(s), s.recordSealer())
	if err != nil {
		return nil, "", err
	}
	store.Logger = logger
	return store, GuardDir(s), nil
}

// Content opens the content store: the folder's "content" subfolder, or
// the database's content table. With a codec key set (Config.Codec), it
// keeps blobs encrypted at rest.
func (s Settings) Content() (content.Store, error) {
	return s.content(context.Background())
}

func (s Settings) content(ctx context.Context) (content.Store, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.SealedContent(s.sealer()), nil
	}
	return content.NewSealedFileStore(s.ContentDir(), s.sealer())
}

// sealer is the content store's Sealer: the codec, or nil (not a nil
// *codec.Codec in an interface) when none is set.
func (s Settings) sealer() content.Sealer {
	if s.Codec == nil {
		return nil
	}
	return s.Codec
}

// recordSealer is the journal stores' Sealer: the codec, or nil.
func (s Settings) recordSealer() journal.Sealer {
	if s.Codec == nil {
		return nil
	}
	return s.Codec
}

// Executor builds the executor the settings name (fromenv.Executor): the
// model, the demo tools and the MCP servers of AGENTRUN_TOOLS, over the
// content store; logger gets the rate limits' warnings (nil:
// slog.Default()). Close its Tools when done.
func (s Settings) Executor(ctx context.Context, logger *slog.Logger) (*execute.Executor, error) {
	store, err := s.content(ctx)
	if err != nil {
		return nil, err
	}
	return fromenv.Executor(ctx, s.Config, fromenv.Stores{Content: store, Limits: s.LimitStore}, logger)
}

// LimitDir is the folder of the rate limits' shared state under the
// journal folder: <AGENTRUN_JOURNAL>/limits.
func LimitDir(s Settings) string { return filepath.Join(s.Journal, "limits") }

// LimitStore opens the rate limits' store: the folder's "limits"
// subfolder (LimitDir), which the workers and local runs of one host
// share, or the database's agentrun_limits table (through the process's
// one pool of the URL, as the journals and content), which a fleet on many
// hosts shares.
func (s Settings) LimitStore(ctx context.Context) (ratelimit.Store, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.Limits(), nil
	}
	return ratelimit.NewFileStore(LimitDir(s))
}

// LocalRetry is the local engine's retry policy of model and read steps:
// the engines' own (execute.StepRetry) with the attempts and first wait of
// AGENTRUN_LOCAL_ATTEMPTS and AGENTRUN_LOCAL_RETRY_INTERVAL.
func (s Settings) LocalRetry() execute.Retry {
	r := execute.StepRetry
	if s.LocalAttempts > 0 {
		r.MaxAttempts = s.LocalAttempts
	}
	if s.LocalRetryInterval > 0 {
		r.Interval = s.LocalRetryInterval
	}
	return r
}
