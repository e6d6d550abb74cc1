package activities

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"go.temporal.io/sdk/activity"

	"github.com/agentrun/agentrun/agent"
)

// envTestHoldAfter names a test-only crash point; production never sets
// it. When a worker's environment has AGENTRUN_TEST_HOLD_AFTER=TOOL, every
// write call of TOOL that returns without error (its effect has happened)
// is held before its result reaches the guard or Temporal: the worker logs
// "hold after TOOL: waiting to be killed" at Warn and keeps heartbeating
// until the activity's context is done, then fails the attempt with the
// context's error, so the result is never recorded. Tests SIGKILL the
// worker while it holds.
const envTestHoldAfter = "AGENTRUN_TEST_HOLD_AFTER"

// testHoldAfter is the tool named by envTestHoldAfter, read once; "" (the
// production case) turns the hook off.
var testHoldAfter = sync.OnceValue(func() string { return os.Getenv(envTestHoldAfter) })

// holdAfter returns fn, or, when the test hook names the step's tool, fn
// followed by the hold described at envTestHoldAfter. CallTool applies it
// to writes only, inside the guard's step function, so a held write has
// started and never completes in the guard journal.
func (a *Activities) holdAfter(step agent.Step, fn func(context.Context) (json.RawMessage, error)) func(context.Context) (json.RawMessage, error) {
	tool := testHoldAfter()
	if tool == "" || step.Call == nil || step.Call.Name != tool {
		return fn
	}
	return func(ctx context.Context) (json.RawMessage, error) {
		res, err := fn(ctx)
		if err != nil {
			return res, err
		}
		info := activity.GetInfo(ctx)
		a.logger().Warn("hold after "+tool+": waiting to be killed",
			"run_id", info.WorkflowExecution.ID, "step", step.Name, "attempt", info.Attempt)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
}

// envTestHoldBefore names the crash point before a write's effect; production
// never sets it. When a worker's environment has
// AGENTRUN_TEST_HOLD_BEFORE=TOOL, every write call of TOOL is held after the
// guard recorded its start and before the tool runs: the worker logs "hold
// before TOOL: waiting to be killed" at Warn and keeps heartbeating until the
// activity's context is done, then fails the attempt with the context's
// error, so the tool never runs on that attempt. Tests SIGKILL the worker
// while it holds: the guard journal then holds a start with no end, and the
// world holds no effect.
const envTestHoldBefore = "AGENTRUN_TEST_HOLD_BEFORE"

// testHoldBefore is the tool named by envTestHoldBefore, read once; ""
// (the production case) turns the hook off.
var testHoldBefore = sync.OnceValue(func() string { return os.Getenv(envTestHoldBefore) })

// holdBefore returns fn, or, when the test hook names the step's tool, the
// hold described at envTestHoldBefore followed by nothing (the attempt
// fails when its context is done). CallTool applies it to writes only,
// inside the guard's step function, next to holdAfter.
func (a *Activities) holdBefore(step agent.Step, fn func(context.Context) (json.RawMessage, error)) func(context.Context) (json.RawMessage, error) {
	tool := testHoldBefore()
	if tool == "" || step.Call == nil || step.Call.Name != tool {
		return fn
	}
	return func(ctx context.Context) (json.RawMessage, error) {
		info := activity.GetInfo(ctx)
		a.logger().Warn("hold before "+tool+": waiting to be killed",
			"run_id", info.WorkflowExecution.ID, "step", step.Name, "attempt", info.Attempt)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
}

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
