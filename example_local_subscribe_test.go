package agentrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// A local run's events come from its journal: subscribe while it runs, or
// after, from the start or from an offset.
func ExampleLocalRun_Subscribe() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentrun-subscribe")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	type orderIn struct {
		Order string `json:"order"`
	}
	order, err := agentrun.NewTool(agentrun.ToolOptions{Name: "order", Description: "Look an order up."},
		func(_ context.Context, in orderIn) (string, error) { return "order " + in.Order + ": shipped", nil })
	if err != nil {
		log.Fatal(err)
	}
	model := llm.NewScripted(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "order", Args: json.RawMessage(`{"order":"7"}`)}}},
		{Text: "Your " + llm.LastToolResult},
	}})
	l, err := agentrun.NewLocal(agentrun.Config{Journal: dir,
		Agents: []agentrun.Agent{{Name: "orders", Model: model, Tools: []tools.Tool{order}}}})
	if err != nil {
		log.Fatal(err)
	}
	run, err := l.Start(ctx, agentrun.StartOptions{ID: "order-7", Prompt: "Where is order 7?"})
	if err != nil {
		log.Fatal(err)
	}
	for u, err := range run.Subscribe(ctx, agentrun.SubscribeOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		if p := u.Event.Preview; p != "" {
			fmt.Printf("%v: %s\n", u, p)
		} else {
			fmt.Println(u)
		}
	}
	// Output:
	// 0 status Running
	// 1 step.started llm/1
	// 1 step.completed llm/1: calls order
	// 2 step.started tool/1/0/order
	// 2 step.completed tool/1/0/order: order 7: shipped
	// 3 step.started llm/2
	// 3 step.completed llm/2: Your order 7: shipped
	// 4 status Completed: Your order 7: shipped
}
