package workflows

import "go.temporal.io/sdk/workflow"

// versionChanges is taken first in every execution, before anything it
// records. Version 1 takes every change impliedBy lists at 1 or below at
// its version 1 with no marker of its own. Each marker costs the history
// two events (the marker and the sdk's upsert of TemporalChangeVersion)
// and, in a workflow task that records no other, a billable action on
// Temporal Cloud: an execution took two at its start and more as it went
// (its first answered update, a call with an approval timeout, a child
// run). The default, in histories recorded before, takes each change by
// its own marker, where it always did. A change added later is listed
// with the next version of versionChanges, and changesMax raised to it.
const versionChanges = "changes"

// changesMax is versionChanges' newest version.
const changesMax workflow.Version = 1

// impliedBy is, for each change, the version of versionChanges from which
// an execution takes it at its version 1 without a marker.
var impliedBy = map[string]workflow.Version{
	versionParkedContinue:   1,
	versionQuietRejects:     1,
	versionForwardAnswer:    1,
	versionUpdateAnswer:     1,
	versionExpiryClock:      1,
	versionTrustedContinued: 1,
	versionCatalogChecked:   1,
	versionFewerActions:     1,
	versionChildRead:        1,
	versionChildShare:       1,
	versionActivityNames:    1,
	versionStartAgent:       1,
}

// versions are the changes an execution takes (versionChanges).
type versions struct{ changes workflow.Version }

// takeVersions takes versionChanges: call it first in an execution.
func takeVersions(ctx workflow.Context) versions {
	return versions{changes: workflow.GetVersion(ctx, versionChanges, workflow.DefaultVersion, changesMax)}
}

// of returns the version the execution takes of change (whose newest
// version is 1): 1 when versionChanges implies it, else the change's own
// workflow.GetVersion, which records its marker in a new history and reads
// it in one recorded before.
func (v versions) of(ctx workflow.Context, change string) workflow.Version {
	if since, ok := impliedBy[change]; ok && v.changes >= since {
		return 1
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1)
}
