package agentrun_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// A refund write declares how to learn, after an interrupted call (the
// worker died, the payment provider never answered within the timeout),
// whether the refund went through: it asks find_refund, a read tool of the
// same agent, about the call's order. A refund found is the call's result,
// and the write does not run again; none found, it runs once more.
func ExampleProbe() {
	type order struct {
		Order string `json:"order" jsonschema:"the order"`
	}
	find, err := agentrun.NewTool(agentrun.ToolOptions{Name: "find_refund", Description: "Find the refund of an order."},
		func(ctx context.Context, in order) (string, error) {
			return "no refund for " + in.Order, nil // ask the payment provider
		})
	if err != nil {
		log.Fatal(err)
	}
	probe := &agentrun.Probe{
		Tool:     "find_refund",
		Args:     map[string]any{"order": "{{args.order}}"}, // the refund's own argument
		Found:    `^refunded: (R-\S+)`,                      // the result: the refund's id
		NotFound: `^no refund`,
	}
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true, Timeout: 30 * time.Second, Probe: probe},
		func(ctx context.Context, in order) (string, error) {
			return "R-" + in.Order, nil // the payment provider's refund
		})
	if err != nil {
		log.Fatal(err)
	}
	refunds := agentrun.Agent{Name: "refunds", Model: llm.NewScripted(llm.HandExample()), Tools: []tools.Tool{refund, find}}
	p := refund.Spec().Probe // what the engine's guard asks
	fmt.Println(refunds.Name+":", refund.Spec().Name, "is settled by", p.Tool, string(p.Args))

	// A probe NewTool can tell is wrong is refused there; one whose tool
	// is not a read of the agent, by Register.
	probe.Found = "refunded: (R-"
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Write: true, Probe: probe},
		func(ctx context.Context, in order) (string, error) { return "", nil })
	fmt.Println(err)
	// Output:
	// refunds: refund is settled by find_refund {"order":"{{args.order}}"}
	// tool refund: probe: found: "refunded: (R-" is not a regular expression: error parsing regexp: missing closing ): `refunded: (R-`
}
