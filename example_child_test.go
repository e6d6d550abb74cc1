package agentrun_test

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
)

// A team's workflow hands a customer's request to the refunds agent and
// returns what it answered.
func ExampleRunAgent() {
	support := func(ctx workflow.Context, request string) (string, error) {
		res, err := agentrun.RunAgent(ctx, agentrun.StartOptions{Agent: "refunds", Prompt: request})
		if err != nil {
			return "", err
		}
		if res.Status != agentrun.StatusCompleted {
			return "", fmt.Errorf("the refunds agent %s: %s", res.Status, res.Reason)
		}
		return res.Answer, nil
	}
	_ = support // register it on the worker beside agentrun.Register
}
