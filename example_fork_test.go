package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// A finished run forked after its refund onto another agent: the refund
// is the origin's result, never made again, and only the new agent's one
// model call runs. A fork before the refund is refused, naming it, until
// the writes are acknowledged; a replay runs no tool at all.
func ExampleLocal_Fork() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentrun-fork")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	refunds := 0
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true, Approval: "never"},
		func(_ context.Context, in struct {
			Order string `json:"order"`
		}) (string, error) {
			refunds++
			return "R-" + in.Order, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	call := llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7"}`)}}}
	first := llm.NewScripted(llm.Script{Turns: []llm.Turn{call, {Text: "Refunded: " + llm.LastToolResult}}})
	polite := llm.NewScripted(llm.Script{Turns: []llm.Turn{call, {Text: "Sorry for the trouble; your refund is " + llm.LastToolResult + "."}}})
	l, err := agentrun.NewLocal(agentrun.Config{Journal: dir, Agents: []agentrun.Agent{
		{Name: "refunds", Model: first, Tools: []tools.Tool{refund}},
		{Name: "polite", Model: polite, Tools: []tools.Tool{refund}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := l.Start(ctx, agentrun.StartOptions{ID: "refund-7", Prompt: "Refund order 7."}); err != nil {
		log.Fatal(err)
	}

	// After the refund (model call 2 on): the polite agent answers anew.
	fork, err := l.Fork(ctx, "refund-7", agentrun.ForkOptions{From: "llm/2", Agent: "polite"})
	if err != nil {
		log.Fatal(err)
	}
	st, err := fork.State(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fork.ID(), st.Status, st.Answer)
	fmt.Println("model calls:", st.Turns, "refunds:", refunds)

	// Before the refund: refused, naming it.
	_, err = l.Fork(ctx, "refund-7", agentrun.ForkOptions{From: "llm/1", Agent: "polite"})
	var hazard *agentrun.HazardError
	fmt.Println(errors.As(err, &hazard), hazard.Writes[0])

	// A replay from the start runs no tool: the refund is the origin's.
	replay, err := l.Fork(ctx, "refund-7", agentrun.ForkOptions{From: "llm/1", Agent: "polite", Replay: true})
	if err != nil {
		log.Fatal(err)
	}
	drift, err := replay.Drift(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(drift.Departed, drift.AnswerChanged, "refunds:", refunds)
	// Output:
	// refund-7-fork-llm.2-2b0ba6 Completed Sorry for the trouble; your refund is R-7.
	// model calls: 1 refunds: 1
	// true tool/1/0/refund (returned R-7)
	// llm/2 true refunds: 1
}
