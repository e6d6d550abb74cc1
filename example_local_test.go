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

// The local engine runs an agent in this process, with no Temporal
// server, over a journal folder: the refund waits for a person, who reads
// its typed arguments and approves it; the run then goes on to its answer.
func ExampleLocal() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentrun-local")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	type refundIn struct {
		Order       string `json:"order"`
		AmountCents int    `json:"amount_cents"`
	}
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true},
		func(_ context.Context, in refundIn) (string, error) { return "R-" + in.Order, nil })
	if err != nil {
		log.Fatal(err)
	}
	model := llm.NewScripted(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7","amount_cents":4999}`)}}},
		{Text: "Refunded: " + llm.LastToolResult},
	}})
	l, err := agentrun.NewLocal(agentrun.Config{Journal: dir,
		Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}}}})
	if err != nil {
		log.Fatal(err)
	}

	// Start drives the run until it ends or waits for a person.
	run, err := l.Start(ctx, agentrun.StartOptions{ID: "refund-7", Prompt: "Refund order 7."})
	if err != nil {
		log.Fatal(err)
	}
	// Later, or in another process over the same folder: l.Run("refund-7").
	calls, err := run.Pending(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var in refundIn
	if err := calls[0].Args(&in); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s waits: order %s, %d cents\n", calls[0].Marker, in.Order, in.AmountCents)
	if _, err := run.Approve(ctx, calls[0].Marker, calls[0].Digest); err != nil {
		log.Fatal(err)
	}
	res, err := run.Resume(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Answer)
	// Output:
	// tool/1/0/refund waits: order 7, 4999 cents
	// Completed Refunded: R-7
}

// Code written against Operator runs on either engine: a Temporal
// [agentrun.Run] (Client.Run) or a [agentrun.LocalRun] (Local.Run).
func ExampleOperator() {
	approveRefundsUnder := func(ctx context.Context, run agentrun.Operator, cents int) error {
		calls, err := run.Pending(ctx)
		if err != nil {
			return err
		}
		for _, call := range calls {
			var in struct {
				AmountCents int `json:"amount_cents"`
			}
			if call.Tool != "refund" || call.Indeterminate || call.Args(&in) != nil {
				continue
			}
			if in.AmountCents < cents {
				_, err = run.Approve(ctx, call.Marker, call.Digest)
			} else {
				_, err = run.Deny(ctx, call.Marker, call.Digest, "above the desk's limit; ask a manager")
			}
			if err != nil {
				return fmt.Errorf("run %s: %w", run.ID(), err)
			}
		}
		return nil
	}
	_ = approveRefundsUnder
}
