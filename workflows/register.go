package workflows

import (
	"github.com/agentrun/agentrun/activities"
	"go.temporal.io/sdk/workflow"
)

// RegisterOptions registers AgentRun under its contract name, pinned: on a
// worker that uses Worker Versioning, a run stays on the build it started
// on until it ends (continuing as new included), so a run parked for days
// on an approval finishes on the code that recorded its history. An
// unversioned worker ignores the behaviour.
var RegisterOptions = workflow.RegisterOptions{Name: WorkflowName, VersioningBehavior: workflow.VersioningBehaviorPinned}

// versionActivityNames guards the activities' names: version 1 schedules
// them under agentrun's own names (activities.Prefix); the default, in
// histories recorded before, under the bare method names. Taken once per
// execution, before its first activity.
const versionActivityNames = "activity-names"

// versionStartAgent guards runs that name their agent at their start (an
// agent of the worker's Named ones, activities.ListAgentToolsAtStart):
// version 1 lists that agent's tools; the default failed the run with
// ForgedAgent. Taken only by a run with no parent that names an agent.
const versionStartAgent = "start-agent"

// names are the activity names an execution schedules.
type names struct{ listTools, listAgentTools, listAgentToolsAtStart, callModel, callTool string }

// activityNames returns the names this execution schedules (see
// versionActivityNames).
func activityNames(ctx workflow.Context, v versions) names {
	if v.of(ctx, versionActivityNames) == workflow.DefaultVersion {
		// No run of such a build names its agent at its start.
		return names{"ListTools", "ListAgentTools", "", "CallModel", "CallTool"}
	}
	return names{activities.NameListTools, activities.NameListAgentTools, activities.NameListAgentToolsAtStart, activities.NameCallModel, activities.NameCallTool}
}
