package workflows_test

import (
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/workflows"
)

// A client that starts AgentRun itself, rather than through agentrun.Client,
// sets the attributes a run starts with: the run then upserts no Running of
// its own (one billable action fewer on Temporal Cloud). A fork names its
// origin; a run started with another run's name there corrects it.
func ExampleStartAttributes() {
	opts := client.StartWorkflowOptions{
		ID:                    "refund-42",
		TaskQueue:             "agentrun",
		TypedSearchAttributes: workflows.StartAttributes(""),
	}
	status, _ := opts.TypedSearchAttributes.GetKeyword(workflows.StatusKey)
	fmt.Println(status, opts.TypedSearchAttributes.ContainsKey(workflows.ForkOfKey))

	fork := workflows.StartAttributes("refund-42")
	origin, _ := fork.GetKeyword(workflows.ForkOfKey)
	fmt.Println(origin)
	// Output:
	// Running false
	// refund-42
}
