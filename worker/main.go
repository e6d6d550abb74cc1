// Command worker runs one worker of an agentrun fleet: it polls the task
// queue (AGENTRUN_TASK_QUEUE, default agentrun) for AgentRun workflows and
// their activities. Workers of one queue must share AGENTRUN_JOURNAL, which
// holds the write guard and the content store: one journal folder, or one
// PostgreSQL database (a postgres:// URL). With AGENTRUN_DEPLOYMENT set it
// joins that Temporal worker deployment as build AGENTRUN_BUILD_ID (default
// derived from the binary) and gets tasks once that build is current or
// ramping; a malformed name or build id stops it at start-up (exit 2).
// SIGTERM or SIGINT stops it gracefully.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrun/agentrun/internal/cli"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	settings, err := cli.LoadSettings(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(cli.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.RunWorker(ctx, settings, logger); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(cli.ExitError)
	}
}
