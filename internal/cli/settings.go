package cli

import (
	"context"
	"log/slog"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/fromenv"
	"github.com/agentrun/agentrun/journal"
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

// The stores AGENTRUN_JOURNAL names are package fromenv's: a folder or
// PostgreSQL, one pool per database and process, sealed with the codec.

// ContentDir is the content store's folder: <AGENTRUN_JOURNAL>/content.
// It means nothing when AGENTRUN_JOURNAL is a PostgreSQL URL.
func (s Settings) ContentDir() string { return fromenv.ContentDir(s.Config) }

// IsPostgresURL reports whether an AGENTRUN_JOURNAL value names a
// PostgreSQL database rather than a folder.
func IsPostgresURL(v string) bool { return fromenv.IsPostgresURL(v) }

// JournalStore opens the local engine's journal store (fromenv.JournalStore).
func (s Settings) JournalStore(ctx context.Context) (journal.Store, error) {
	return fromenv.JournalStore(ctx, s.Config)
}

// GuardStore opens the write guard's journal store of a Temporal worker
// (fromenv.GuardStore) and says where it is, for logs.
func (s Settings) GuardStore(ctx context.Context, logger *slog.Logger) (journal.Store, string, error) {
	return fromenv.GuardStore(ctx, s.Config, logger)
}

// Content opens the content store (fromenv.Content).
func (s Settings) Content() (content.Store, error) {
	return fromenv.Content(context.Background(), s.Config)
}

// Executor builds the executor the settings name (fromenv.Executor): the
// model, the demo tools and the MCP servers of AGENTRUN_TOOLS, over the
// content store; logger gets the rate limits' warnings (nil:
// slog.Default()). Close its Tools when done.
func (s Settings) Executor(ctx context.Context, logger *slog.Logger) (*execute.Executor, error) {
	return fromenv.Executor(ctx, s.Config, logger)
}

// LimitDir is the folder of the rate limits' shared state under the
// journal folder: <AGENTRUN_JOURNAL>/limits.
func LimitDir(s Settings) string { return fromenv.LimitDir(s.Config) }

// LimitStore opens the rate limits' store (fromenv.LimitStore).
func (s Settings) LimitStore(ctx context.Context) (ratelimit.Store, error) {
	return fromenv.LimitStore(ctx, s.Config)
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
