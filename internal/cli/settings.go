package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
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
	"github.com/agentrun/agentrun/workflows"
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
	// ModelTimeout bounds one model request, from sending it to reading
	// the whole answer; expiry is a retryable Timeout. Default 2m
	// (AGENTRUN_MODEL_TIMEOUT).
	ModelTimeout time.Duration
	// ModelSettings are the request settings of Model (temperature, top_p,
	// seed, max_tokens, reasoning_effort, extra), its entry in the models
	// file named by AGENTRUN_MODELS. Default: none.
	ModelSettings agent.ModelSettings
	// FailOnCut makes a run whose final answer the model's length limit
	// cut off fail instead of completing flagged as cut off. Default false
	// (AGENTRUN_FAIL_ON_CUT_ANSWER=1 sets it).
	FailOnCut bool
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
	// MaxActivities bounds the steps a worker runs at once; a worker with
	// none free asks Temporal for no more. Default 0: the sdk's, 1,000
	// (AGENTRUN_MAX_ACTIVITIES, a positive integer).
	MaxActivities int
	// Demo configures the demo tools (AGENTRUN_TICKETS, AGENTRUN_DEMO_DELAY).
	Demo tools.DemoConfig
	// Tools is the tools file named by AGENTRUN_TOOLS: MCP servers and
	// per-tool overrides. Unset: the demo tools alone. Its ApprovalTimeout
	// comes from AGENTRUN_APPROVAL_TIMEOUT (a Go duration; unset: never).
	Tools tools.Config
	// Commands name the programs in the commands printed for a person.
	// Not read from the environment: the mains set it from os.Args[0]
	// (CommandsFor). Zero: the bare names, as on a PATH.
	Commands Commands
	// MaxTurns is the limit on model calls the starter gives a new run
	// (AGENTRUN_MAX_TURNS; the starter's --max-turns overrides it). Default
	// 25 (agent.DefaultMaxTurns).
	MaxTurns int
	// MaxTokens is the limit on tokens (input plus output) the starter gives
	// a new run (AGENTRUN_MAX_TOKENS_PER_RUN; --max-tokens overrides it).
	// Default 0: no limit.
	MaxTokens int64
	// SessionIdle is how long a session run (starter --session) waits Idle
	// for a message after an answer before it completes with that answer
	// (AGENTRUN_SESSION_IDLE, a Go duration). Default 24h. The starter puts
	// it in the run's input, so the run's timer does not depend on the
	// worker's settings.
	SessionIdle time.Duration
	// Metrics is the address where a worker serves Prometheus metrics
	// (/metrics) and its health (/healthz), HOST:PORT or :PORT, e.g. :9464.
	// Default "": off (AGENTRUN_METRICS).
	Metrics string
	// Deployment is the Temporal worker deployment a worker joins
	// (AGENTRUN_DEPLOYMENT), e.g. "agentrun": letters, digits, _ and -.
	// Set, Worker Versioning is on: the worker polls as build BuildID of
	// Deployment, AgentRun runs are pinned to the build they started on,
	// and tasks reach a build only once an operator makes it current (or
	// ramps it). Default "": versioning off, the worker polls unversioned.
	Deployment string
	// BuildID is the worker's build id within Deployment
	// (AGENTRUN_BUILD_ID): letters, digits, _, -, . and +. Default, when
	// Deployment is set: DefaultBuildID (the git revision the binary was
	// built from). Setting it without Deployment is an error.
	BuildID string
	// NoStream keeps a worker's model steps from publishing their text to
	// their run's stream, whatever the run asks (AGENTRUN_STREAM=off; the
	// text lands in the run's history as signals). Default: runs that ask
	// (sessions, starter --wait or --stream) stream.
	NoStream bool
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
		Journal:      cmp.Or(getenv("AGENTRUN_JOURNAL"), DefaultJournal),
		Model:        cmp.Or(getenv("AGENTRUN_MODEL"), "scripted"),
		TaskQueue:    cmp.Or(getenv("AGENTRUN_TASK_QUEUE"), DefaultTaskQueue),
		UI:           cmp.Or(getenv("AGENTRUN_UI_URL"), DefaultUI),
		StopTimeout:  DefaultStopTimeout,
		ModelTimeout: llm.DefaultTimeout,
		MaxTurns:     agent.DefaultMaxTurns,
		SessionIdle:  workflows.DefaultSessionIdle,
	}
	if v := getenv("AGENTRUN_SESSION_IDLE"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return s, fmt.Errorf("AGENTRUN_SESSION_IDLE=%q is not a positive duration: want a Go duration such as 30m or 24h (default 24h)", v)
		}
		s.SessionIdle = d
	}
	if v := getenv("AGENTRUN_MODEL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return s, fmt.Errorf("AGENTRUN_MODEL_TIMEOUT=%q is not a positive duration: want a Go duration such as 90s or 5m (default 2m)", v)
		}
		s.ModelTimeout = d
	}
	if v := strings.TrimSpace(getenv("AGENTRUN_FAIL_ON_CUT_ANSWER")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, fmt.Errorf("AGENTRUN_FAIL_ON_CUT_ANSWER=%q is not a boolean: want 1 (fail runs whose final answer was cut off) or 0", v)
		}
		s.FailOnCut = b
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("AGENTRUN_STREAM"))); v {
	case "", "on", "1", "true":
	case "off", "0", "false":
		s.NoStream = true
	default:
		return s, fmt.Errorf("AGENTRUN_STREAM=%q is not on or off: want off (model text is never streamed) or on (the default: runs that ask stream)", v)
	}
	if path := getenv(llm.EnvModels); path != "" {
		models, err := llm.LoadModels(path)
		if err != nil {
			return s, fmt.Errorf("%s: %w", llm.EnvModels, err)
		}
		ms, ok := models[s.Model]
		if !ok {
			return s, fmt.Errorf("%s: %s has no settings for AGENTRUN_MODEL=%s; it has %s", llm.EnvModels, path, s.Model, strings.Join(slices.Sorted(maps.Keys(models)), ", "))
		}
		s.ModelSettings = ms
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
	if v := getenv("AGENTRUN_MAX_ACTIVITIES"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return s, fmt.Errorf("AGENTRUN_MAX_ACTIVITIES=%q is not a positive integer: want the most steps a worker runs at once, e.g. 100", v)
		}
		s.MaxActivities = n
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
	if err := s.loadVersioning(getenv); err != nil {
		return s, err
	}
	if v := strings.TrimSpace(getenv("AGENTRUN_APPROVAL_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("AGENTRUN_APPROVAL_TIMEOUT=%q is not a positive duration: want a Go duration such as 30m or 24h (unset: approvals never expire)", v)
		}
		s.Tools.ApprovalTimeout = d
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
	model, err := llm.New(s.Model, llm.Options{Timeout: s.ModelTimeout, Settings: s.ModelSettings})
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
	return &execute.Executor{Model: model, Tools: set, Content: store, ContextBudget: s.ContextBudget, ModelTimeout: s.ModelTimeout, FailOnCut: s.FailOnCut}, nil
}
