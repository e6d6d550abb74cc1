// Command worker runs one worker of an agentrun fleet: it polls the task
// queue (AGENTRUN_TASK_QUEUE, default agentrun) for AgentRun workflows and
// their activities. Workers of one queue must share AGENTRUN_JOURNAL, which
// holds the write guard and the content store: one journal folder, or one
// PostgreSQL database (a postgres:// URL). With AGENTRUN_DEPLOYMENT set it
// joins that Temporal worker deployment as build AGENTRUN_BUILD_ID (default
// derived from the binary) and gets tasks once that build is current or
// ramping. A setting it cannot use (a malformed name or build id, a bad
// model or key) stops it at start-up with one line naming the variable
// (exit 2); other errors exit 1.
// SIGTERM or SIGINT stops it gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/config"
)

func main() {
	logger, cfg := cli.StartService("worker")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.RunWorker(ctx, cli.Settings{Config: cfg}, logger); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", cli.TermSafe(err.Error()))
		if errors.As(err, new(*config.Error)) { // a missing key, found when it builds the model
			os.Exit(cli.ExitSettings)
		}
		os.Exit(cli.ExitError)
	}
}
