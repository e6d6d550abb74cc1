package cli

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/agentrun/agentrun/internal/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// Settings are agentrun's own settings, read from AGENTRUN_ variables.
// Temporal's client settings come from the sdk's envconfig instead.
type Settings struct {
	// Journal is the journal folder. Default ".agentrun/journal"
	// (AGENTRUN_JOURNAL). Temporal workers keep the write guard's journal in
	// its subfolder "temporal"; every worker of a task queue must share it.
	Journal string
	// Model names the model provider (AGENTRUN_MODEL). Default "scripted".
	Model string
	// TaskQueue is the Temporal task queue. Default "agentrun"
	// (AGENTRUN_TASK_QUEUE).
	TaskQueue string
	// UI is the Temporal Web UI's address, for links. Default
	// "http://localhost:8233" (AGENTRUN_UI_URL).
	UI string
	// StopTimeout is how long a stopping worker lets running steps finish.
	// Default 10s (AGENTRUN_STOP_TIMEOUT).
	StopTimeout time.Duration
	// Demo configures the demo tools (AGENTRUN_TICKETS, AGENTRUN_DEMO_DELAY).
	Demo tools.DemoConfig
	// Tools is the tools file named by AGENTRUN_TOOLS: MCP servers and
	// per-tool overrides. Unset: the demo tools alone.
	Tools tools.Config
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

// Executor builds the model provider and the tools the settings name: the
// demo tools and the MCP servers of AGENTRUN_TOOLS. Close its Tools when
// done.
func (s Settings) Executor(ctx context.Context) (*execute.Executor, error) {
	model, err := llm.New(s.Model)
	if err != nil {
		return nil, fmt.Errorf("AGENTRUN_MODEL: %w", err)
	}
	set, err := tools.Open(ctx, s.Tools, s.Demo)
	if err != nil {
		return nil, err
	}
	return &execute.Executor{Model: model, Tools: set}, nil
}
