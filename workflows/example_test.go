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

// An operator update answers with the state's Brief: where the run stands,
// its steps counted but not listed again in the history.
func ExampleState_Brief() {
	st := workflows.State{
		Status:      "AwaitingApproval",
		MessageStep: "llm/3",
		Steps:       []workflows.StepRecord{{Name: "llm/1", Kind: "model", Preview: "looking up order A-1001"}},
		StepCount:   1,
		Answer:      "an earlier answer",
	}
	b := st.Brief()
	fmt.Println(b.Status, b.MessageStep, b.StepCount, len(b.Steps), b.Answer == "")
	// Output:
	// AwaitingApproval llm/3 1 0 true
}
