// Command plainworker is the baseline of embeddedworker: a plain Temporal
// worker as a team writes one, worker.New with a workflow that runs a bare
// activity, the same settings read and the same start and stop. The bench
// (section library) counts the packages it links and its size.
//
// It reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and AGENTRUN_TASK_QUEUE. It
// logs "worker started" once it polls; SIGINT or SIGTERM stops it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "plainworker:", err)
		os.Exit(1)
	}
}

// Chain runs n bare activities one after another.
func Chain(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for range n {
		if err := workflow.ExecuteActivity(ctx, Noop).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Noop is the bare activity.
func Noop(context.Context) error { return nil }

func run() error {
	// The TEMPORAL_* settings as their standard says (and the worker
	// program reads them): the sdk's envconfig.
	opts, err := envconfig.LoadDefaultClientOptions()
	if err != nil {
		return err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return err
	}
	defer c.Close()
	queue := os.Getenv("AGENTRUN_TASK_QUEUE")
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(Chain)
	w.RegisterActivity(Noop)
	if err := w.Start(); err != nil {
		return err
	}
	slog.Info("worker started", "task_queue", queue)
	<-worker.InterruptCh()
	w.Stop()
	return nil
}
