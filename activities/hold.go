package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
)

// The hold points inside a write (AGENTRUN_TEST_HOLD_BEFORE and
// AGENTRUN_TEST_HOLD_AFTER) live in the executor, which both engines share:
// see execute/hold.go.

// Test are the activities' test-only crash points; production leaves them
// zero. The worker sets them from internal/config's Test section, which
// tests set through the worker process's environment.
type Test struct {
	// HoldList makes ListTools log "hold in tools: waiting to be killed"
	// at Warn and keep heartbeating until the activity's context is done,
	// then fail the attempt with the context's error. Tests SIGKILL the
	// worker while it holds, to check that the run goes on within the
	// heartbeat timeout (AGENTRUN_TEST_HOLD_LIST=1). Default false.
	HoldList bool
}

// holdInList holds ListTools as Test.HoldList describes, or returns nil at
// once (the production case).
func (a *Activities) holdInList(ctx context.Context) error {
	if !a.Test.HoldList {
		return nil
	}
	info := activity.GetInfo(ctx)
	a.log(ctx).Warn("hold in tools: waiting to be killed", "run_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	<-ctx.Done()
	return context.Cause(ctx)
}
