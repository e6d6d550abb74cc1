// Command embeddedworker is the smallest worker a Go team writes to run
// agentrun's agents on a worker of its own: worker.New, agentrun.Register
// with one agent (the scripted model, one Go read tool made by
// agentrun.NewTool), agentrun.EnsureSearchAttributes, and Start. The bench (section library) times its steps
// against the worker program's and counts the packages it links and its
// size against plainworker's, a plain Temporal worker.
//
// It reads what the worker program reads: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, AGENTRUN_TASK_QUEUE, AGENTRUN_JOURNAL, and
// AGENTRUN_MODEL=scripted:PATH, the script its model plays. It logs
// "worker started" once it polls; SIGINT or SIGTERM stops it.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embeddedworker:", err)
		os.Exit(1)
	}
}

// lookupIn is the lookup tool's input.
type lookupIn struct {
	Topic string `json:"topic" jsonschema:"the topic, e.g. vpn"`
}

func run() error {
	path, ok := strings.CutPrefix(os.Getenv("AGENTRUN_MODEL"), "scripted:")
	if !ok {
		return fmt.Errorf("AGENTRUN_MODEL=%q; want scripted:PATH, the script the model plays", os.Getenv("AGENTRUN_MODEL"))
	}
	script, err := llm.LoadScript(path)
	if err != nil {
		return err
	}
	lookup, err := agentrun.NewTool(agentrun.ToolOptions{Name: "lookup", Description: "Look up the company policy on a topic."},
		func(_ context.Context, in lookupIn) (string, error) {
			if in.Topic != "vpn" {
				return "No policy found for " + in.Topic + "; known topics: vpn.", nil
			}
			return "VPN policy: every employee may use the VPN; request a certificate from IT.", nil
		})
	if err != nil {
		return err
	}
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
	if err := agentrun.EnsureSearchAttributes(context.Background(), c, cmp.Or(opts.Namespace, "default")); err != nil {
		return err
	}
	queue := os.Getenv("AGENTRUN_TASK_QUEUE")
	w := worker.New(c, queue, worker.Options{})
	err = agentrun.Register(w, agentrun.Config{
		Journal: os.Getenv("AGENTRUN_JOURNAL"),
		Agents:  []agentrun.Agent{{Name: "support", Model: llm.NewScripted(script), Tools: []tools.Tool{lookup}}},
	})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	slog.Info("worker started", "task_queue", queue)
	<-worker.InterruptCh()
	w.Stop()
	return nil
}
