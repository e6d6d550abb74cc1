package execute

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Test are test-only crash points inside a write; production leaves them
// zero. Both engines run every step through Execute, inside the guard's
// step function (journal.RunStep: the start is recorded before and the
// result after), so one implementation holds a write on the local engine
// (starter --local) and on a Temporal worker alike. The programs set them
// from AGENTRUN_TEST_HOLD_BEFORE, AGENTRUN_TEST_HOLD_AFTER and
// AGENTRUN_TEST_HOLD_FOR (internal/config's Test section), which tests set
// on the worker and starter processes they crash.
//
// HoldBefore and HoldAfter name a tool (create_ticket: every write call of
// it) or one step (tool/5/0/create_ticket: that call only). A held call
// logs, at Warn on the executor's Logger, "hold before TOOL: waiting to be
// killed" or "hold after TOOL: waiting to be killed" with the step, then
// waits until its context is done and fails with the context's error, so
// its result is never recorded. Tests SIGKILL the process while it holds.
// On Temporal the activity keeps heartbeating around Execute meanwhile.
//
// HoldFor makes a hold end by itself, as a process that was frozen or cut
// off goes on with its write: a held call logs "hold before TOOL: holding
// for DURATION", waits that long (a frozen process finds the time passed
// when it resumes), logs "hold before TOOL: released" and goes on whatever
// happened meanwhile: the tool runs (only its own check of its context,
// tools.Live, stands between it and a second effect), or its result is
// returned. The crash campaign's freeze and partition points and the
// freeze and partition tests use it, before and after the effect.
type Test struct {
	// HoldBefore holds a write after its start is recorded and before the
	// tool runs: the journal then holds a start with no end, and the world
	// holds no effect. Default "": no hold.
	HoldBefore string
	// HoldAfter holds a write whose tool returned without error (its
	// effect has happened) before its result reaches the journal. Default
	// "": no hold.
	HoldAfter string
	// HoldFor makes a hold end after this long instead of waiting to be
	// killed. Default 0: wait to be killed.
	HoldFor time.Duration
}

// hold holds a write step as Test describes, when target names its tool or
// the step; otherwise, the production case, it returns nil at once. where
// is "before" or "after".
func (e *Executor) hold(ctx context.Context, target, where string, step agent.Step) error {
	if target == "" || step.Kind != agent.KindWrite || step.Call == nil || (target != step.Call.Name && target != step.Name) {
		return nil
	}
	name := "hold " + where + " " + step.Call.Name
	d := e.Test.HoldFor
	if d <= 0 {
		e.logger().Warn(name+": waiting to be killed", "step", step.Name)
		<-ctx.Done()
		return context.Cause(ctx)
	}
	e.logger().Warn(name+": holding for "+d.String(), "step", step.Name)
	time.Sleep(d)
	e.logger().Warn(name+": released", "step", step.Name)
	return nil
}

func (e *Executor) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}
