package activities

import (
	"context"
	"os"
	"sync"

	"go.temporal.io/sdk/activity"
)

// The hold points inside a write (AGENTRUN_TEST_HOLD_BEFORE and
// AGENTRUN_TEST_HOLD_AFTER) live in the executor, which both engines share:
// see execute/hold.go.

// envTestHoldList names another test-only crash point: when a worker's
// environment has AGENTRUN_TEST_HOLD_LIST=1, ListTools logs "hold in tools:
// waiting to be killed" at Warn and keeps heartbeating until the activity's
// context is done, then fails the attempt with the context's error. Tests
// SIGKILL the worker while it holds, to check that the run goes on within
// the heartbeat timeout.
const envTestHoldList = "AGENTRUN_TEST_HOLD_LIST"

var testHoldList = sync.OnceValue(func() bool { return os.Getenv(envTestHoldList) == "1" })

// holdInList holds ListTools as envTestHoldList describes, or returns nil
// at once (the production case).
func (a *Activities) holdInList(ctx context.Context) error {
	if !testHoldList() {
		return nil
	}
	info := activity.GetInfo(ctx)
	a.logger().Warn("hold in tools: waiting to be killed", "run_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	<-ctx.Done()
	return context.Cause(ctx)
}
