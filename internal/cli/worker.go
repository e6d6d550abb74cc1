package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/fromenv"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/metrics/prometheus"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
	"github.com/agentrun/agentrun/workflows"
)

// GuardDir is the folder of the write guard's journal under the journal
// folder: <AGENTRUN_JOURNAL>/temporal. It means nothing when
// AGENTRUN_JOURNAL is a PostgreSQL URL (see Settings.GuardStore).
func GuardDir(s Settings) string { return fromenv.GuardDir(s.Config) }

// RunWorker runs one worker of the fleet until ctx is done, then stops
// gracefully: running steps get StopTimeout to finish. With s.Metrics set
// it serves /metrics and /healthz there from before it dials Temporal until
// it has stopped.
func RunWorker(ctx context.Context, s Settings, logger *slog.Logger) error {
	logger = logtext.For(logger, s.Codec != nil) // with the codec on, no payload text in the logs
	var (
		ep       *prometheus.Endpoint
		recorder *metrics.Recorder
		sdk      client.MetricsHandler
	)
	if s.Metrics != "" {
		var err error
		if ep, err = prometheus.Listen(s.Metrics); err != nil {
			return fmt.Errorf("AGENTRUN_METRICS=%s: %w", s.Metrics, err)
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), metricsCloseTimeout)
			defer cancel()
			if err := ep.Close(ctx); err != nil {
				logger.Warn("metrics endpoint close", "err", err)
			}
		}()
		if recorder, err = metrics.NewRecorder(ep.Provider); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		sdk = ep.SDKHandler(func(err error) { logger.Warn("temporal sdk metric", "err", err) })
		logger.Info("serving metrics", "addr", ep.Addr, "paths", "/metrics /healthz")
	}
	cfg, guardAt, closeTools, err := fromenv.Worker(ctx, s.Config, logger)
	if err != nil {
		return err
	}
	defer closeTools()
	tr, err := export.Start(ctx, s.Tracing, export.ServiceWorker, operator.Signals(), logger) // nil: off
	if err != nil {
		return err
	}
	defer func() {
		if err := tr.Shutdown(ctx); err != nil {
			logger.Warn("tracing: flush at stop", "error", err)
		}
	}()
	if tr != nil {
		logger.Info("tracing on", "endpoint", s.Tracing.Endpoint, "sampler", s.Tracing.Sampler, "capture_content", s.Tracing.CaptureContent)
	}
	c, err := cluster.Dial(ctx, logger, sdk, s.Codec, s.GRPCCompression, tr.ClientInterceptors()...)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := workflows.EnsureSearchAttributes(ctx, c, c.Namespace); errors.Is(err, workflows.ErrForkAttributeMissing) {
		// A namespace set up before forks: runs work; forks wait for it.
		logger.Warn("forks will not start until the search attribute exists", "error", err)
	} else if err != nil {
		return err
	}
	// The sdk stops the worker itself after a fatal error (e.g. the
	// namespace is gone) and calls OnFatalError first.
	fatal := make(chan error, 1)
	if s.StickyCache > 0 {
		// Process-wide, and set before the first worker starts.
		worker.SetStickyWorkflowCacheSize(s.StickyCache)
	}
	w := worker.New(c.Client, s.TaskQueue, worker.Options{
		WorkerStopTimeout:                  s.StopTimeout,
		MaxConcurrentActivityExecutionSize: s.MaxActivities,
		DeploymentOptions:                  s.deploymentOptions(),
		// The test-only hooks reach the activities in their context; with
		// none (production) this is the sdk's default, context.Background().
		BackgroundActivityContext: testhook.With(context.Background(), s.Test),
		OnFatalError: func(err error) {
			select {
			case fatal <- err:
			default:
			}
		},
	})
	// The one registration path of the library and the programs: the
	// workflow (the test-only changed one when a test asks) and the
	// activities, under the names of builds before agentrun.-prefixed ones
	// too, as this worker may take over runs such a build started.
	cfg.Metrics, cfg.Tracer, cfg.CaptureContent = recorder, tr.Tracer(), tr.Capture()
	if err := agentrun.Register(w, cfg); err != nil {
		return err
	}

	if err := w.Start(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if ep != nil {
		ep.Ready()
	}
	logger.Info("worker started", "task_queue", s.TaskQueue, "namespace", c.Namespace, "model", cfg.Agents[0].Model.Name(), "guard", guardAt)
	if s.Deployment != "" {
		logger.Info("worker versioning on: tasks arrive once this build is current or ramping",
			"deployment", s.Deployment, "build_id", s.BuildID,
			"make_current", "temporal worker deployment set-current-version --deployment-name "+s.Deployment+" --build-id "+s.BuildID)
	}
	var ferr error
	select {
	case <-ctx.Done():
	case ferr = <-fatal:
	}
	if ep != nil {
		ep.Stopping()
	}
	w.Stop()
	if ferr != nil {
		return fmt.Errorf("worker: %w", ferr)
	}
	logger.Info("worker stopped")
	return nil
}

// deploymentOptions are the worker's Worker Versioning options: none when
// s.Deployment is unset. No default behaviour: AgentRun declares its own
// (pinned, in workflows.RegisterOptions), and the sdk refuses to register
// a workflow without one on a versioned worker, so a new workflow type
// must choose.
func (s Settings) deploymentOptions() worker.DeploymentOptions {
	if s.Deployment == "" {
		return worker.DeploymentOptions{}
	}
	return worker.DeploymentOptions{
		UseVersioning: true,
		Version:       worker.WorkerDeploymentVersion{DeploymentName: s.Deployment, BuildID: s.BuildID},
	}
}

// metricsCloseTimeout bounds how long a stopped worker waits for scrapes in
// flight before it exits.
const metricsCloseTimeout = 2 * time.Second
