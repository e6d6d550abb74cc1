package workflows

import "go.temporal.io/sdk/workflow"

// RegisterOptions registers AgentRun under its contract name.
var RegisterOptions = workflow.RegisterOptions{Name: WorkflowName}
