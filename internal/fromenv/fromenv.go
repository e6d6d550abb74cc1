package fromenv

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/frontdoor"
	"github.com/agentrun/agentrun/internal/testhook/wfchange"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/llm/providers"
	"github.com/agentrun/agentrun/ratelimit"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/tools/mcp"
)

// AgentName names the programs' default agent in its Config (Agents). A
// run cannot name it at its start (the programs' runs name no agent), so
// it shows only in the Config's errors.
const AgentName = "default"

// Worker builds the Config a worker of the programs registers
// (agentrun.Register): Load's, and the activities' names of older builds
// too, so that it takes over the runs such a build started (and, in
// tests, the workflow change AGENTRUN_TEST_WORKFLOW_CHANGE asks for).
// guardAt says where the write guard's journal is, for logs. Call close
// when the worker has stopped: it stops the MCP servers.
func Worker(ctx context.Context, c config.Config, logger *slog.Logger) (cfg agentrun.Config, guardAt string, close func() error, err error) {
	cfg, p, guardAt, close, err := build(ctx, c, logger)
	if err != nil {
		return agentrun.Config{}, "", nil, err
	}
	p.LegacyNames = true
	if c.Test.WorkflowChange { // test-only: a breaking change to the workflow
		p.Workflow = wfchange.Workflow(true)
	}
	return frontdoor.Attach(cfg, p).(agentrun.Config), guardAt, close, nil
}

// Load builds the Config of the programs' agents for a worker of
// another program (package environ): its model (AGENTRUN_MODEL), the
// tools of AGENTRUN_TOOLS and the demo tools, the stores AGENTRUN_JOURNAL
// names. Its activities have agentrun's own names only. Call close when
// the worker has stopped.
func Load(ctx context.Context, c config.Config, logger *slog.Logger) (cfg agentrun.Config, close func() error, err error) {
	cfg, p, _, close, err := build(ctx, c, logger)
	if err != nil {
		return agentrun.Config{}, nil, err
	}
	return frontdoor.Attach(cfg, p).(agentrun.Config), close, nil
}

// build builds the Config of the programs' agents and what it runs with
// (p, to attach); logger gets the activities' and the rate limits' lines.
func build(ctx context.Context, c config.Config, logger *slog.Logger) (agentrun.Config, *frontdoor.Program, string, func() error, error) {
	exec, err := Executor(ctx, c, logger)
	if err != nil {
		return agentrun.Config{}, nil, "", nil, err
	}
	if err := activities.CheckWriteTimeouts(exec.Tools); err != nil {
		_ = exec.Tools.Close()
		return agentrun.Config{}, nil, "", nil, config.Errorf("AGENTRUN_TOOLS: %w", err)
	}
	guard, guardAt, err := GuardStore(ctx, c, logger)
	if err != nil {
		_ = exec.Tools.Close()
		return agentrun.Config{}, nil, "", nil, err
	}
	p := &frontdoor.Program{
		ContextBudget: exec.ContextBudget, ModelTimeout: exec.ModelTimeout, LimitWait: exec.LimitWait,
		FailOnCut: exec.FailOnCut, FailOnEmpty: exec.FailOnEmpty, AgentDepth: c.Tools.AgentDepth,
	}
	cfg := agentrun.Config{
		Agents:   Agents(exec, p),
		Guard:    guard,
		Content:  exec.Content,
		Logger:   logger,
		NoStream: c.NoStream,
	}
	if c.Codec != nil {
		cfg.DataConverter = codec.DataConverter(c.Codec)
	}
	return cfg, p, guardAt, exec.Tools.Close, nil
}

// Executor builds the model provider, the tools the settings name (the
// demo tools and the MCP servers of AGENTRUN_TOOLS) and the models of the
// tools file's agents, over the content store (Content); logger gets the
// rate limits' warnings (nil: slog.Default()). Close its Tools when done.
func Executor(ctx context.Context, c config.Config, logger *slog.Logger) (*execute.Executor, error) {
	lim := limiter{logger: logger, c: c}
	opts, err := lim.options(ctx, c.ModelOptions())
	if err != nil {
		return nil, err
	}
	model, err := providers.New(c.Model, opts)
	if err != nil { // a missing key: config.Load checked the rest
		return nil, config.Errorf("AGENTRUN_MODEL: %w", err)
	}
	store, err := Content(ctx, c)
	if err != nil {
		return nil, err
	}
	tc := c.Tools
	tc.Connect = mcp.Source
	set, err := tools.Open(ctx, tc, c.Demo)
	if err != nil {
		return nil, err
	}
	var lerr error
	models, err := execute.BuildModels(set.AgentModels(), func(spec string) (llm.Provider, error) {
		o, err := lim.options(ctx, c.AgentModelOptions(spec))
		lerr = cmp.Or(lerr, err)
		return providers.New(spec, o)
	})
	if err = cmp.Or(lerr, err); err != nil {
		_ = set.Close()
		return nil, config.Errorf("%s: %w", cmp.Or(c.Tools.Path, "AGENTRUN_TOOLS"), err)
	}
	var wait time.Duration
	if lim.l != nil {
		wait = llm.MaxLimitWait
	}
	return &execute.Executor{Model: model, Models: models, Tools: set, Content: store, ContextBudget: c.ContextBudget, ModelTimeout: c.ModelTimeout, LimitWait: wait, FailOnCut: c.FailOnCut, FailOnEmpty: c.FailOnEmpty}, nil
}

// limiter opens the rate limits' store the first time a model declares
// limits, and gives every such model the same Limiter.
type limiter struct {
	l      *ratelimit.Limiter
	logger *slog.Logger
	c      config.Config // whose LimitStore the Limiter keeps its state in
}

// options returns o with the Limiter set when its settings declare limits.
func (lim *limiter) options(ctx context.Context, o llm.Options) (llm.Options, error) {
	if o.Settings.Limits == nil {
		return o, nil
	}
	if lim.l == nil {
		store, err := LimitStore(ctx, lim.c)
		if err != nil {
			return o, err
		}
		lim.l = &ratelimit.Limiter{Store: store, Logger: lim.logger}
	}
	o.Limiter = lim.l
	return o, nil
}

// Model builds the model spec names (a spec as AGENTRUN_MODEL takes it),
// with the settings the models file gives it and its rate limits: the
// model of a fork's live steps (reconcile fork --model).
func Model(ctx context.Context, c config.Config, spec string) (llm.Provider, error) {
	lim := limiter{c: c}
	o, err := lim.options(ctx, c.AgentModelOptions(spec))
	if err != nil {
		return nil, err
	}
	p, err := providers.New(spec, o)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec, err)
	}
	return p, nil
}
