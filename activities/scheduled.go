package activities

import (
	"context"
	"encoding/json"

	"go.temporal.io/sdk/activity"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
)

// An activity tool's call (agent.ToolSpec.Activity) is scheduled by the
// run as the tool's own activity, on its own task queue, so the engine's
// tool step never runs it. The worker's say comes first all the same:
// PrepareCall, run as a local activity (a result no one can complete by
// hand), checks the step as CallTool does and returns the activity's input,
// and Keep files a large result in the content store.

// ScheduledCall is what PrepareCall returns: the input to schedule the
// activity with, or the step's result when its arguments do not match the
// tool's input (the model reads what was wrong; nothing is scheduled).
type ScheduledCall struct {
	Input  json.RawMessage `json:"input,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// PrepareCall checks an activity tool's step against this worker's tools,
// its run's tool list and its approval rule, as CallTool does before a
// tool runs, and returns the activity's input: the call's arguments (read
// from the store when kept by reference, the idempotency key filled in),
// as the tool's input type takes them.
func (a *Activities) PrepareCall(ctx context.Context, in StepInput) (ScheduledCall, error) {
	if in.Step.Call == nil || in.Spec == nil || in.Spec.Activity == nil {
		return ScheduledCall{}, refused("step %s is not a call of an activity tool", in.Step.Name)
	}
	a, err := a.forAgent(in.Agent, in.Step.Name)
	if err != nil {
		return ScheduledCall{}, err
	}
	if err := a.checkTool(in.Step); err != nil {
		return ScheduledCall{}, err
	}
	if err := a.checkSpec(in); err != nil {
		return ScheduledCall{}, err
	}
	if err := a.checkBinding(in); err != nil {
		return ScheduledCall{}, err
	}
	t, _ := a.Exec.Tools.Lookup(in.Step.Call.Name) // checkTool found it
	sched, ok := t.(tools.Scheduled)
	if !ok {
		return ScheduledCall{}, refused("step %s calls tool %s as an activity; this worker's %s is not an activity tool", in.Step.Name, in.Step.Call.Name, in.Step.Call.Name)
	}
	step, err := a.Exec.Prepare(ctx, in.Step)
	if err != nil {
		if cerr := contentError(ctx, err); cerr != nil {
			return ScheduledCall{}, cerr
		}
		return ScheduledCall{}, err
	}
	if why := a.Exec.CheckApproval(step, t.Spec()); why != "" {
		return ScheduledCall{}, refused("%s", why)
	}
	input, wrong := sched.Input(step.Call.Args)
	if wrong != "" {
		return ScheduledCall{Result: agent.EncodeToolResult(agent.ToolResult{IsError: true, Content: wrong})}, nil
	}
	info := activity.GetInfo(ctx)
	a.log(ctx).Debug("activity tool call prepared", "run_id", info.WorkflowExecution.ID, "step", in.Step.Name, "activity", in.Spec.Activity.Name)
	return ScheduledCall{Input: input}, nil
}

// KeepResult returns an activity tool's result in recorded form, its
// content in the store when it is larger than agent.InlineLimit.
func (a *Activities) KeepResult(ctx context.Context, step string, res agent.ToolResult) (json.RawMessage, error) {
	return a.Exec.Keep(ctx, step, res)
}
