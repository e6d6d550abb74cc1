package testhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Hooks are the test-only hooks; each is inert at its zero value.
//
// HoldBefore and HoldAfter name a tool (create_ticket: every write call of
// it) or one step (tool/5/0/create_ticket: that call only). A held call
// logs, at Warn, "hold before TOOL: waiting to be killed" or "hold after
// TOOL: waiting to be killed" with the step, then waits until its context
// is done and fails with the context's error, so its result is never
// recorded. Tests SIGKILL the process while it holds. On Temporal the
// activity keeps heartbeating around the step meanwhile.
//
// HoldFor makes a hold end by itself, as a process that was frozen or cut
// off goes on with its write: a held call logs "hold before TOOL: holding
// for DURATION", waits that long (a frozen process finds the time passed
// when it resumes), logs "hold before TOOL: released" and goes on whatever
// happened meanwhile: the tool runs (only its own check of its context,
// tools.Live, stands between it and a second effect), or its result is
// returned. The crash campaign's freeze and partition points and the
// freeze and partition tests use it, before and after the effect.
type Hooks struct {
	// HoldBefore holds a write after its start is recorded and before the
	// tool runs: the journal then holds a start with no end, and the world
	// holds no effect (AGENTRUN_TEST_HOLD_BEFORE). Default "": no hold.
	HoldBefore string
	// HoldAfter holds a write whose tool returned without error (its
	// effect has happened) before its result reaches the journal
	// (AGENTRUN_TEST_HOLD_AFTER). Default "": no hold.
	HoldAfter string
	// HoldFor makes a hold end after this long instead of waiting to be
	// killed (AGENTRUN_TEST_HOLD_FOR, a positive Go duration). Default 0:
	// wait to be killed.
	HoldFor time.Duration
	// HoldList makes ListTools (and ListAgentTools) log "hold in tools:
	// waiting to be killed" at Warn and keep heartbeating until the
	// activity's context is done, then fail the attempt with the context's
	// error. Tests SIGKILL the worker while it holds, to check that the
	// run goes on within the heartbeat timeout (AGENTRUN_TEST_HOLD_LIST=1).
	// Default false.
	HoldList bool
	// WorkflowChange makes every AgentRun execution start with a 1 ms
	// timer before anything else: a different command sequence, so the
	// worker fails with a non-determinism error on the history of a run
	// started without it (package wfchange). The Worker Versioning test
	// runs "build B" with it to prove that runs pinned to build A never
	// reach B (AGENTRUN_TEST_WORKFLOW_CHANGE=1). Default false.
	WorkflowChange bool
}

type key struct{}

// With returns ctx carrying h; for the zero Hooks (production), ctx
// itself.
func With(ctx context.Context, h Hooks) context.Context {
	if h == (Hooks{}) {
		return ctx
	}
	return context.WithValue(ctx, key{}, h)
}

// From returns the hooks ctx carries: the zero Hooks when it carries none.
func From(ctx context.Context) Hooks {
	h, _ := ctx.Value(key{}).(Hooks)
	return h
}

// Where a write is held: before its tool runs, or after it returned.
const (
	Before = "before"
	After  = "after"
)

// Hold holds the write step at where (Before or After) as Hooks describes,
// when the hooks of ctx name its tool or the step there, logging to
// logger; otherwise, the production case, it returns nil at once.
func Hold(ctx context.Context, logger *slog.Logger, where string, step agent.Step) error {
	if step.Kind != agent.KindWrite || step.Call == nil {
		return nil
	}
	h := From(ctx)
	target := h.HoldBefore
	if where == After {
		target = h.HoldAfter
	}
	if target == "" || (target != step.Call.Name && target != step.Name) {
		return nil
	}
	name := "hold " + where + " " + step.Call.Name
	if h.HoldFor <= 0 {
		logger.Warn(name+": waiting to be killed", "step", step.Name)
		<-ctx.Done()
		return context.Cause(ctx)
	}
	logger.Warn(name+": holding for "+h.HoldFor.String(), "step", step.Name)
	time.Sleep(h.HoldFor)
	logger.Warn(name+": released", "step", step.Name)
	return nil
}
