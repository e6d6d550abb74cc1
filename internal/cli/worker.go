package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/workflows"
)

// GuardDir is the folder of the write guard's journal under the journal
// folder: <AGENTRUN_JOURNAL>/temporal. It means nothing when
// AGENTRUN_JOURNAL is a PostgreSQL URL (see Settings.GuardStore).
func GuardDir(s Settings) string { return filepath.Join(s.Journal, "temporal") }

// RunWorker runs one worker of the fleet until ctx is done, then stops
// gracefully: running steps get StopTimeout to finish.
func RunWorker(ctx context.Context, s Settings, logger *slog.Logger) error {
	exec, err := s.Executor(ctx)
	if err != nil {
		return err
	}
	defer exec.Tools.Close()
	store, guardAt, err := s.GuardStore(ctx, logger)
	if err != nil {
		return err
	}
	c, err := cluster.Dial(ctx, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := cluster.EnsureSearchAttributes(ctx, c, c.Namespace); err != nil {
		return err
	}
	w := worker.New(c.Client, s.TaskQueue, worker.Options{WorkerStopTimeout: s.StopTimeout})
	w.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	w.RegisterActivity(&activities.Activities{
		Exec:   exec,
		Guard:  &journal.Journal{Store: store},
		Logger: logger,
	})
	logger.Info("worker started", "task_queue", s.TaskQueue, "namespace", c.Namespace, "model", exec.Model.Name(), "guard", guardAt)
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	if err := w.Run(stop); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	logger.Info("worker stopped")
	return nil
}
