package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	tlog "go.temporal.io/sdk/log"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/examples/refund"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(ctx, logger); err != nil {
		fmt.Fprintln(os.Stderr, "refund:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger) error {
	opts, err := clientOptions(logger)
	if err != nil {
		return err
	}
	c, err := client.Dial(opts)
	if err != nil {
		return fmt.Errorf("dial %s: %w", opts.HostPort, err)
	}
	defer c.Close()
	if err := agentrun.EnsureSearchAttributes(ctx, c, opts.Namespace); err != nil {
		return err
	}
	journal, err := os.MkdirTemp("", "refund-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(journal)

	payments, mailer := refund.NewPayments(refund.SampleOrders()...), &refund.Mailer{}
	w, err := refund.Worker(c, refund.TaskQueue, refund.Options{Payments: payments, Mailer: mailer, Journal: journal, Logger: logger})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	id := fmt.Sprintf("support-%d", time.Now().UnixMilli())
	support, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: refund.TaskQueue},
		refund.SupportWorkflow, "Order A-1001 arrived broken; please refund it.")
	if err != nil {
		return err
	}
	runs, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: refund.TaskQueue})
	if err != nil {
		return err
	}
	agentRun := runs.Run(refund.AgentRunID(id))
	fmt.Printf("started %s; the agent runs as %s\n", id, agentRun.ID())
	call, err := refund.AwaitApproval(ctx, agentRun, func(st agentrun.State) {
		fmt.Printf("agent run: %s\n", st.Status)
	})
	if err != nil {
		return err
	}
	var args refund.RefundInput
	if err := call.Args(&args); err != nil {
		return err
	}
	fmt.Printf("approving %s: refund %d cents of order %s (%q)\n", call.Marker, args.AmountCents, args.OrderID, args.Reason)
	if _, err := agentRun.Approve(ctx, call.Marker, call.Digest); err != nil {
		return err
	}
	var answer string
	if err := support.Get(ctx, &answer); err != nil {
		return err
	}
	fmt.Printf("answer: %s\nrefunds made: %d\nemails sent: %d\n", answer, payments.Refunds(), mailer.Sent())
	return nil
}

// clientOptions reads the server's address and namespace as the temporal
// CLI does: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, a profile.
func clientOptions(logger *slog.Logger) (client.Options, error) {
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client settings: %w", err)
	}
	opts, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client settings: %w", err)
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	opts.Logger = tlog.NewStructuredLogger(logger)
	return opts, nil
}
