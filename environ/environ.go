package environ

import (
	"context"
	"log/slog"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/fromenv"
)

// Load reads the agentrun programs' settings through getenv (os.Getenv,
// or a map's lookup in a test) and returns the Config of the agents the
// worker program runs: first the default agent of its runs, with the model
// AGENTRUN_MODEL names, the demo tools and the tools of AGENTRUN_TOOLS;
// then the agents of AGENTRUN_TOOLS, which its runs may call as child
// runs. None may be named at a run's start (Agent.NoStart). The stores
// are the ones AGENTRUN_JOURNAL names. Register it with agentrun.Register
// on a worker of the task queue the programs use (AGENTRUN_TASK_QUEUE,
// default "agentrun"). logger gets agentrun's lines (nil: slog.Default()).
// Call close once the worker has stopped: it stops the tools file's MCP
// servers.
//
// A setting that cannot be used is a one-line error naming the variable
// and what is valid, and nothing is left open.
func Load(ctx context.Context, getenv func(string) string, logger *slog.Logger) (cfg agentrun.Config, close func() error, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	c, err := config.Load(getenv)
	if err != nil {
		return agentrun.Config{}, nil, err
	}
	return fromenv.Load(ctx, c, logger)
}
