package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/postgres"
	"github.com/agentrun/agentrun/tools"
)

// Settings are agentrun's own settings, read from AGENTRUN_ variables.
// Temporal's client settings come from the sdk's envconfig instead.
type Settings struct {
	// Journal says where durable state lives (AGENTRUN_JOURNAL): a folder
	// or a PostgreSQL URL. Default ".agentrun/journal".
	//
	// A folder holds the local engine's journal; Temporal workers keep the
	// write guard's journal in its subfolder "temporal", and both engines
	// keep the content store (large values, conversations) in "content";
	// every worker of a task queue must share it (one host, or a file
	// system with working flock).
	//
	// A postgres:// or postgresql:// URL (libpq form, e.g.
	// postgres://agentrun:PASSWORD@db:5432/agentrun?sslmode=require) keeps
	// all three in that database (package postgres), so workers on many
	// hosts share nothing but PostgreSQL and Temporal. The tables are
	// created or migrated on first use. Logs and errors name the host,
	// port, database and user, never the password.
	Journal string
	// Model names the model provider (AGENTRUN_MODEL). Default "scripted".
	Model string
	// TaskQueue is the Temporal task queue. Default "agentrun"
	// (AGENTRUN_TASK_QUEUE).
	TaskQueue string
	// UI is the Temporal Web UI's address, for links. Default
	// "http://localhost:8233" (AGENTRUN_UI_URL).
	UI string
	// ContextBudget bounds the estimated tokens of a model request: past it
	// the oldest tool results are left out. Default by provider: 128000
	// (openai), 200000 (anthropic), none (scripted)
	// (AGENTRUN_CONTEXT_BUDGET).
	ContextBudget int
	// StopTimeout is how long a stopping worker lets running steps finish.
	// Default 10s (AGENTRUN_STOP_TIMEOUT).
	StopTimeout time.Duration
	// Demo configures the demo tools (AGENTRUN_TICKETS, AGENTRUN_DEMO_DELAY).
	Demo tools.DemoConfig
	// Tools is the tools file named by AGENTRUN_TOOLS: MCP servers and
	// per-tool overrides. Unset: the demo tools alone.
	Tools tools.Config
	// MaxTurns is the limit on model calls the starter gives a new run
	// (AGENTRUN_MAX_TURNS; the starter's --max-turns overrides it). Default
	// 25 (agent.DefaultMaxTurns).
	MaxTurns int
	// MaxTokens is the limit on tokens (input plus output) the starter gives
	// a new run (AGENTRUN_MAX_TOKENS_PER_RUN; --max-tokens overrides it).
	// Default 0: no limit.
	MaxTokens int64
	// Metrics is the address where a worker serves Prometheus metrics
	// (/metrics) and its health (/healthz), HOST:PORT or :PORT, e.g. :9464.
	// Default "": off (AGENTRUN_METRICS).
	Metrics string
}

// Defaults of Settings.
const (
	DefaultJournal     = ".agentrun/journal"
	DefaultTaskQueue   = "agentrun"
	DefaultUI          = "http://localhost:8233"
	DefaultStopTimeout = 10 * time.Second
)

// LoadSettings reads the settings from the environment through getenv.
func LoadSettings(getenv func(string) string) (Settings, error) {
	s := Settings{
		Journal:     cmp.Or(getenv("AGENTRUN_JOURNAL"), DefaultJournal),
		Model:       cmp.Or(getenv("AGENTRUN_MODEL"), "scripted"),
		TaskQueue:   cmp.Or(getenv("AGENTRUN_TASK_QUEUE"), DefaultTaskQueue),
		UI:          cmp.Or(getenv("AGENTRUN_UI_URL"), DefaultUI),
		StopTimeout: DefaultStopTimeout,
		MaxTurns:    agent.DefaultMaxTurns,
	}
	if v := getenv("AGENTRUN_MAX_TURNS"); v != "" {
		n, err := positive("AGENTRUN_MAX_TURNS", v, maxTurnsWant)
		if err != nil {
			return s, err
		}
		s.MaxTurns = int(n)
	}
	if v := getenv("AGENTRUN_MAX_TOKENS_PER_RUN"); v != "" {
		n, err := positive("AGENTRUN_MAX_TOKENS_PER_RUN", v, maxTokensWant)
		if err != nil {
			return s, err
		}
		s.MaxTokens = n
	}
	if v := getenv("AGENTRUN_STOP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return s, fmt.Errorf("AGENTRUN_STOP_TIMEOUT=%q is not a duration: want a Go duration such as 30s", v)
		}
		s.StopTimeout = d
	}
	if v := strings.TrimSpace(getenv("AGENTRUN_METRICS")); v != "" {
		if err := metrics.ValidateAddr(v); err != nil {
			return s, fmt.Errorf("AGENTRUN_METRICS=%q is not a listen address (%v): want HOST:PORT or :PORT, e.g. :9464 or 127.0.0.1:9464", v, err)
		}
		s.Metrics = v
	}
	s.ContextBudget = llm.DefaultContextBudget(s.Model)
	if v := getenv("AGENTRUN_CONTEXT_BUDGET"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return s, fmt.Errorf("AGENTRUN_CONTEXT_BUDGET=%q is not a positive number: want the most tokens a model request may hold, e.g. 100000", v)
		}
		s.ContextBudget = n
	}
	demo, err := tools.DemoConfigFromEnv()
	if err != nil {
		return s, err
	}
	s.Demo = demo
	if s.Tools, err = tools.ConfigFromEnv(); err != nil {
		return s, err
	}
	return s, nil
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
// database's local journal.
func (s Settings) JournalStore(ctx context.Context) (journal.Store, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.Journal(), nil
	}
	return journal.NewFileStore(s.Journal)
}

// GuardStore opens the write guard's journal store of a Temporal worker:
// the folder's "temporal" subfolder (GuardDir), or the database's guard
// journal. It returns where that is, for logs.
func (s Settings) GuardStore(ctx context.Context, logger *slog.Logger) (journal.Store, string, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, "", err
	case db != nil:
		return db.Guard(), db.String(), nil
	}
	store, err := journal.NewFileStore(GuardDir(s))
	if err != nil {
		return nil, "", err
	}
	store.Logger = logger
	return store, GuardDir(s), nil
}

// Content opens the content store: the folder's "content" subfolder, or
// the database's content table.
func (s Settings) Content() (content.Store, error) {
	return s.content(context.Background())
}

func (s Settings) content(ctx context.Context) (content.Store, error) {
	db, err := s.database(ctx)
	switch {
	case err != nil:
		return nil, err
	case db != nil:
		return db.Content(), nil
	}
	return content.NewFileStore(s.ContentDir())
}

// Executor builds the model provider, the tools the settings name (the
// demo tools and the MCP servers of AGENTRUN_TOOLS) and the content store.
// Close its Tools when done.
func (s Settings) Executor(ctx context.Context) (*execute.Executor, error) {
	model, err := llm.New(s.Model)
	if err != nil {
		return nil, fmt.Errorf("AGENTRUN_MODEL: %w", err)
	}
	store, err := s.content(ctx)
	if err != nil {
		return nil, err
	}
	set, err := tools.Open(ctx, s.Tools, s.Demo)
	if err != nil {
		return nil, err
	}
	return &execute.Executor{Model: model, Tools: set, Content: store, ContextBudget: s.ContextBudget}, nil
}
