package workflows

import "go.temporal.io/sdk/workflow"

// RegisterOptions registers AgentRun under its contract name, pinned: on a
// worker that uses Worker Versioning, a run stays on the build it started
// on until it ends (continuing as new included), so a run parked for days
// on an approval finishes on the code that recorded its history. An
// unversioned worker ignores the behaviour.
var RegisterOptions = workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorPinned}
