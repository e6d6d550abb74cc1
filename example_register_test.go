package agentrun_test

import (
	"context"
	"log"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// Two agents on a team's own worker: "support" answers and may call
// "refunds", which has a Go write tool.
func ExampleRegister() {
	c, err := client.Dial(client.Options{}) // TEMPORAL_ADDRESS, or localhost:7233
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true},
		func(ctx context.Context, in struct {
			Order string `json:"order"`
		}) (string, error) {
			return "R-" + in.Order, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	model := llm.NewScripted(llm.HandExample()) // or an OpenAI or Anthropic provider
	cfg := agentrun.Config{
		Journal: "/var/lib/agentrun",
		Agents: []agentrun.Agent{
			{Name: "support", Model: model, System: "You answer customers.", Agents: []string{"refunds"}},
			{Name: "refunds", Description: "Refunds orders.", Model: model, System: "You handle refunds.", Tools: []tools.Tool{refund}},
		},
	}
	w := worker.New(c, "support", worker.Options{})
	if err := agentrun.Register(w, cfg); err != nil {
		log.Fatal(err)
	}
	if err := agentrun.EnsureSearchAttributes(context.Background(), c, "default"); err != nil {
		log.Fatal(err)
	}
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
