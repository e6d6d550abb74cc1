package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// A write step that started and never recorded its result is never run
// again by guesswork: it is Indeterminate until a person reconciles it.
func ExampleGuard_RunStep() {
	ctx := context.Background()
	j := &journal.Guard{Store: journal.NewMemStore()}
	step := agent.Step{Name: hand.TicketStep, Kind: agent.KindWrite}
	crash := func(context.Context) (json.RawMessage, error) {
		return nil, errors.New("the process died after filing the ticket")
	}
	file := func(context.Context) (json.RawMessage, error) {
		fmt.Println("filing a ticket")
		return agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-2"}), nil
	}

	_, err := j.RunStep(ctx, "run-1", step, func(ctx context.Context) (json.RawMessage, error) {
		fmt.Println("filing a ticket")
		return crash(ctx)
	})
	fmt.Println("first attempt:", err)
	_, err = j.RunStep(ctx, "run-1", step, file)
	fmt.Println("second attempt indeterminate:", errors.Is(err, journal.ErrIndeterminate))

	// A person checked: the ticket exists as TICKET-1.
	recs, _ := j.Store.Load("run-1")
	_ = j.Store.Append("run-1", len(recs), journal.Record{Type: journal.SignalRecord,
		Signal: &operator.Signal{Name: operator.SignalReconcile, Step: step.Name, Outcome: operator.OutcomeDone, Result: "TICKET-1"}})
	res, _ := j.RunStep(ctx, "run-1", step, file)
	r, _ := agent.DecodeToolResult(res)
	fmt.Println("after done:", r.Content)
	// Output:
	// filing a ticket
	// first attempt: the process died after filing the ticket
	// second attempt indeterminate: true
	// after done: TICKET-1
}
