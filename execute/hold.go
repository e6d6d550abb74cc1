package execute

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Test-only crash points inside a write; production never sets them. Both
// engines run every step through Execute, inside the guard's step function
// (journal.RunStep: the start is recorded before and the result after), so
// one implementation holds a write on the local engine (starter --local)
// and on a Temporal worker alike.
//
// The value names a tool (create_ticket: every write call of it) or one
// step (tool/5/0/create_ticket: that call only). A held call logs, at Warn
// on the executor's Logger, "hold before TOOL: waiting to be killed" or
// "hold after TOOL: waiting to be killed" with the step, then waits until
// its context is done and fails with the context's error, so its result is
// never recorded. Tests SIGKILL the process while it holds. On Temporal the
// activity keeps heartbeating around Execute meanwhile.
//
// AGENTRUN_TEST_HOLD_FOR=DURATION makes a hold end by itself, as a process
// that was frozen or cut off goes on with its write: a held call logs "hold
// before TOOL: holding for DURATION", waits that long (a frozen process
// finds the time passed when it resumes), logs "hold before TOOL:
// released" and goes on whatever happened meanwhile: the tool runs (only
// its own check of its context, tools.Live, stands between it and a second
// effect), or its result is returned. The crash campaign's freeze and
// partition points and the freeze and partition tests use it, before and
// after the effect.
const (
	// EnvTestHoldBefore holds a write after its start is recorded and
	// before the tool runs: the journal then holds a start with no end, and
	// the world holds no effect.
	EnvTestHoldBefore = "AGENTRUN_TEST_HOLD_BEFORE"
	// EnvTestHoldAfter holds a write whose tool returned without error (its
	// effect has happened) before its result reaches the journal.
	EnvTestHoldAfter = "AGENTRUN_TEST_HOLD_AFTER"
	// EnvTestHoldFor makes a hold end after a Go duration instead of
	// waiting to be killed.
	EnvTestHoldFor = "AGENTRUN_TEST_HOLD_FOR"
)

// testHolds are the values of the hold variables, read once; "" (the
// production case) turns a hold off.
var testHolds = sync.OnceValue(func() map[string]string {
	return map[string]string{
		EnvTestHoldBefore: os.Getenv(EnvTestHoldBefore),
		EnvTestHoldAfter:  os.Getenv(EnvTestHoldAfter),
		EnvTestHoldFor:    os.Getenv(EnvTestHoldFor),
	}
})

// hold holds a write step as the package's test hold points describe, when
// env names its tool or the step; otherwise, the production case, it
// returns nil at once. where is "before" or "after".
func (e *Executor) hold(ctx context.Context, env, where string, step agent.Step) error {
	v := testHolds()[env]
	if v == "" || step.Kind != agent.KindWrite || step.Call == nil || (v != step.Call.Name && v != step.Name) {
		return nil
	}
	name := "hold " + where + " " + step.Call.Name
	d, _ := time.ParseDuration(testHolds()[EnvTestHoldFor])
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
