package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/tools"
)

// Settings are agentrun's own settings, read from AGENTRUN_ variables.
// Temporal's client settings come from the sdk's envconfig instead.
type Settings struct {
	// Journal is the journal folder. Default ".agentrun/journal"
	// (AGENTRUN_JOURNAL). Temporal workers keep the write guard's journal in
	// its subfolder "temporal", and both engines keep the content store
	// (large values, conversations) in "content"; every worker of a task
	// queue must share it.
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
func (s Settings) ContentDir() string { return filepath.Join(s.Journal, "content") }

// Content opens the content store.
func (s Settings) Content() (content.Store, error) {
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
	store, err := s.Content()
	if err != nil {
		return nil, err
	}
	set, err := tools.Open(ctx, s.Tools, s.Demo)
	if err != nil {
		return nil, err
	}
	return &execute.Executor{Model: model, Tools: set, Content: store, ContextBudget: s.ContextBudget}, nil
}
