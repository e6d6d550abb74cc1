package activities

import (
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// The names the activities are registered under.

// Prefix begins the name of every activity of agentrun, so that none
// collides with a team's own activities on the same worker: a team may
// have a CallTool of its own.
const Prefix = "agentrun."

// The activities' names, as a run schedules them (Register).
const (
	NameListTools      = Prefix + "ListTools"
	NameListAgentTools = Prefix + "ListAgentTools"
	// NameListAgentToolsAtStart is scheduled only under this name.
	NameListAgentToolsAtStart = Prefix + "ListAgentToolsAtStart"
	NameCallModel             = Prefix + "CallModel"
	NameCallTool              = Prefix + "CallTool"
	// NamePrepareCall and NameKeepResult run as local activities around
	// an activity tool's call (scheduled.go).
	NamePrepareCall = Prefix + "PrepareCall"
	NameKeepResult  = Prefix + "KeepResult"
	// NameForkPoint and NameReplayCall run as local activities of a fork
	// (fork.go).
	NameForkPoint  = Prefix + "ForkPoint"
	NameReplayCall = Prefix + "ReplayCall"
	// NameReadAnswer runs as a local activity when a run's stream does not
	// hold a streamed answer that its step recorded by reference.
	NameReadAnswer = Prefix + "ReadAnswer"
)

// LegacyNames are the names runs scheduled the activities under before
// they had Prefix: the bare method names. A run started by such a build
// goes on scheduling them, so a worker that may take over such runs (the
// programs' workers, during an upgrade) registers them too.
var LegacyNames = []string{"ListTools", "ListAgentTools", "CallModel", "CallTool"}

// Register registers a's activities on r under their names (Prefix and the
// method's name); with legacy also under LegacyNames.
func Register(r worker.ActivityRegistry, a *Activities, legacy bool) {
	r.RegisterActivityWithOptions(a, activity.RegisterOptions{Name: Prefix})
	if legacy {
		r.RegisterActivity(a)
	}
}

// Method returns the method an activity type names, whichever name it was
// scheduled under ("agentrun.CallModel" and "CallModel" are both
// "CallModel"), for code that reads histories.
func Method(activityType string) string { return strings.TrimPrefix(activityType, Prefix) }
