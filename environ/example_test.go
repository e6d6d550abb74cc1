package environ_test

import (
	"context"
	"log"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/environ"
)

// The worker program's agent, configured as the programs are (say
// AGENTRUN_MODEL=openai:gpt-4o-mini, AGENTRUN_TOOLS=tools.json,
// AGENTRUN_JOURNAL=/var/lib/agentrun), on a worker of your own beside your
// workflows.
func ExampleLoad() {
	ctx := context.Background()
	cfg, closeTools, err := environ.Load(ctx, os.Getenv, slog.Default())
	if err != nil {
		log.Fatal(err) // one line naming the variable
	}
	defer closeTools()
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, agentrun.DefaultTaskQueue, worker.Options{})
	// w.RegisterWorkflow(YourWorkflow) ...
	if err := agentrun.Register(w, cfg); err != nil {
		log.Fatal(err)
	}
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
