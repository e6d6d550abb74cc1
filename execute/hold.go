package execute

import (
	"context"
	"log/slog"
	"os"
	"strings"
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
const (
	// EnvTestHoldBefore holds a write after its start is recorded and
	// before the tool runs: the journal then holds a start with no end, and
	// the world holds no effect.
	EnvTestHoldBefore = "AGENTRUN_TEST_HOLD_BEFORE"
	// EnvTestHoldAfter holds a write whose tool returned without error (its
	// effect has happened) before its result reaches the journal.
	EnvTestHoldAfter = "AGENTRUN_TEST_HOLD_AFTER"
	// EnvTestPauseBefore pauses a write after its start is recorded and the
	// guard checked its fence, then runs the tool whatever happened
	// meanwhile: "TOOL_OR_STEP@DURATION" (create_ticket@8s). It logs "pause
	// before TOOL" at Warn when the pause starts. Tests freeze the process
	// (SIGSTOP) during the pause and resume it (SIGCONT) after the attempt's
	// deadline: only the tool's own check of its context (tools.Live) stands
	// between the resumed attempt and a second effect.
	EnvTestPauseBefore = "AGENTRUN_TEST_PAUSE_BEFORE"
)

// testHolds are the values of the hold variables, read once; "" (the
// production case) turns a hold off.
var testHolds = sync.OnceValue(func() map[string]string {
	return map[string]string{
		EnvTestHoldBefore:  os.Getenv(EnvTestHoldBefore),
		EnvTestHoldAfter:   os.Getenv(EnvTestHoldAfter),
		EnvTestPauseBefore: os.Getenv(EnvTestPauseBefore),
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
	e.logger().Warn("hold "+where+" "+step.Call.Name+": waiting to be killed", "step", step.Name)
	<-ctx.Done()
	return context.Cause(ctx)
}

func (e *Executor) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

// pause pauses a write step as EnvTestPauseBefore describes, or returns at
// once (the production case). It does not end early with ctx: the point is
// a tool that runs after its attempt lost the write.
func (e *Executor) pause(step agent.Step) {
	v := testHolds()[EnvTestPauseBefore]
	name, d, ok := strings.Cut(v, "@")
	if !ok || step.Kind != agent.KindWrite || step.Call == nil || (name != step.Call.Name && name != step.Name) {
		return
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		return
	}
	e.logger().Warn("pause before "+step.Call.Name, "step", step.Name, "for", dur.String())
	time.Sleep(dur)
}
