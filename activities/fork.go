package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
)

// Forks on Temporal: the worker reads the origin's history itself (a
// local activity, which nobody completes by hand), so a fork's start names
// its origin and never carries its facts.

// ErrTypeForkRefused is the error type of a fork that cannot start: its
// origin, step or agent is wrong, or it would make again writes nobody
// acknowledged (agent.HazardError). Nothing ran.
const ErrTypeForkRefused = "ForkRefused"

// ForkStart is where a fork starts: the state read from its origin, the
// agent its live part runs, and for a replay the key of the origin's
// calls in the content store (ReplayCall).
type ForkStart struct {
	Point agent.ForkPoint `json:"point"`
	Agent string          `json:"agent,omitempty"`
	// Table is the content key of the origin's tool calls from the fork
	// point on (replay only).
	Table string `json:"table,omitempty"`
}

// converterOf is the data converter that reads histories.
func (a *Activities) converterOf() converter.DataConverter {
	if a.Converter != nil {
		return a.Converter
	}
	return converter.GetDefaultDataConverter()
}

// ForkPoint reads fork's origin from its history and returns where the
// fork starts, or a ForkRefused error in one line.
func (a *Activities) ForkPoint(ctx context.Context, fork agent.Fork) (ForkStart, error) {
	if err := fork.Check(); err != nil {
		return ForkStart{}, forkRefused(err)
	}
	n, _ := agent.StepTurn(fork.From)
	rec, err := ReadRecorded(ctx, activity.GetClient(ctx), a.converterOf(), fork.Origin, n)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ForkStart{}, forkRefused(fmt.Errorf("fork: no run %s in this namespace", fork.Origin))
	}
	if err != nil {
		return ForkStart{}, err
	}
	if why := unforkable(rec); why != "" {
		return ForkStart{}, forkRefused(fmt.Errorf("fork: %s", why))
	}
	in, ok := rec.Inputs[fork.From]
	if !ok {
		in, ok = rec.Inputs[agent.ModelStep(n)]
	}
	if !ok {
		return ForkStart{}, forkRefused(fmt.Errorf("fork: %s", neverReached(rec, n)))
	}
	p, err := agent.ForkAt(fork.From, in, rec.Results)
	if err != nil {
		return ForkStart{}, forkRefused(fmt.Errorf("fork of %s: %v", fork.Origin, err))
	}
	p.Hazards = agent.WritesAfter(fork.From, rec.Writes)
	if p, err = p.Gate(fork); err != nil {
		return ForkStart{}, forkRefused(err)
	}
	out := ForkStart{Point: p, Agent: rec.Agent}
	if fork.Agent != "" {
		if sub, ok := a.Exec.Named[fork.Agent]; !ok || sub.NoStart {
			return ForkStart{}, forkRefused(fmt.Errorf("fork: no agent %q on this worker; the agents a run may start with are: %s", fork.Agent, startable(a.Exec.Named)))
		}
		out.Agent = fork.Agent
	}
	if err := a.forkSystem(ctx, fork, rec.Agent, &out); err != nil {
		return ForkStart{}, err
	}
	if fork.Replay {
		if out.Table, err = a.keepCalls(ctx, fork.From, rec); err != nil {
			return ForkStart{}, err
		}
	}
	return out, nil
}

// forkSystem puts the fork's system prompt in its conversation: the
// fork's own, or the new agent's when it changes to an agent that has
// one; otherwise the origin's stays.
func (a *Activities) forkSystem(ctx context.Context, fork agent.Fork, origin string, out *ForkStart) error {
	system := fork.System
	if ex, _ := a.Exec.Agent(out.Agent); system == nil && out.Agent != origin && ex.System != "" {
		system = &ex.System
	}
	if system == nil {
		return nil
	}
	return out.Point.SetSystem(ctx, *system, a.Exec.WithSystem)
}

// keepCalls keeps the origin's tool calls from the step from on in the
// content store, for ReplayCall.
func (a *Activities) keepCalls(ctx context.Context, from string, rec *Recorded) (string, error) {
	calls := []agent.OriginCall{}
	for step, call := range rec.Calls {
		res, ok := rec.Results[step]
		if !ok || agent.StepBefore(step, from) {
			continue
		}
		s, err := a.Exec.Prepare(ctx, agent.Step{Name: step, Kind: agent.KindRead, Call: &call})
		if err != nil {
			return "", fmt.Errorf("fork: the arguments of %s in %s: %w", step, rec.WorkflowID, err)
		}
		calls = append(calls, agent.OriginCall{Step: step, Call: *s.Call, Result: res})
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return "", err
	}
	return a.Exec.Content.Put(ctx, b)
}

// ReplayInput asks ReplayCall for the origin's answer to a call.
type ReplayInput struct {
	Origin string         `json:"origin"`
	Table  string         `json:"table"`
	Step   string         `json:"step"`
	Call   agent.ToolCall `json:"call"`
	// Used are the origin's steps whose answers the replay gave already.
	Used []string `json:"used,omitempty"`
}

// ReplayAnswer is the origin's answer to a replayed call: its result and
// the origin's step that gave it, or, when the origin made no such call,
// an error result and no step.
type ReplayAnswer struct {
	Result json.RawMessage `json:"result"`
	From   string          `json:"from,omitempty"`
}

// ReplayCall answers a call of a replay (agent.Fork.Replay) from the
// origin's record with agent.Replay, as the local engine does: the
// origin's result of the same call, or an error result the model reads.
// No tool runs.
func (a *Activities) ReplayCall(ctx context.Context, in ReplayInput) (ReplayAnswer, error) {
	b, err := a.Exec.Content.Get(ctx, in.Table)
	if err != nil {
		return ReplayAnswer{}, fmt.Errorf("the replay's table %s: %w", in.Table, err)
	}
	var calls []agent.OriginCall
	if err := json.Unmarshal(b, &calls); err != nil {
		return ReplayAnswer{}, fmt.Errorf("the replay's table %s: %w", in.Table, err)
	}
	want, err := a.Exec.Prepare(ctx, agent.Step{Name: in.Step, Kind: agent.KindRead, Call: &in.Call})
	if err != nil {
		return ReplayAnswer{}, err
	}
	used := map[string]bool{}
	for _, s := range in.Used {
		used[s] = true
	}
	res := agent.Replay{Origin: in.Origin, Calls: calls}.Answer(in.Step, *want.Call, used)
	raw, err := json.Marshal(res)
	if err != nil {
		return ReplayAnswer{}, err
	}
	from := res.Replayed
	if from == agent.ReplayedNone {
		from = ""
	}
	return ReplayAnswer{Result: raw, From: from}, nil
}

// unforkable says why a run cannot be forked, "" when it can.
func unforkable(rec *Recorded) string {
	if rec.Type != WorkflowType {
		// Another workflow's history holds no agent run's steps, whatever
		// its activities are named.
		return fmt.Sprintf("run %s is no agent run (its workflow type is %s, not %s)", rec.WorkflowID, rec.Type, WorkflowType)
	}
	switch rec.Status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
	default:
		return fmt.Sprintf("run %s is still in flight (%s); a fork goes on from a run that ended: wait for it, or cancel it", rec.WorkflowID, statusName(rec.Status))
	}
	if rec.Child {
		return fmt.Sprintf("run %s is a child run of an agent tool; fork the run that called it", rec.WorkflowID)
	}
	return ""
}

// neverReached says why the origin has no model step n.
func neverReached(rec *Recorded, n int) string {
	if n < rec.First {
		if rec.Fork != nil {
			return fmt.Sprintf("%s is before the fork point of %s (a fork of %s from %s): fork %s instead", agent.ModelStep(n), rec.WorkflowID, rec.Fork.Origin, rec.Fork.From, rec.Fork.Origin)
		}
		return fmt.Sprintf("%s of %s is in no execution of its history", agent.ModelStep(n), rec.WorkflowID)
	}
	last := 0
	for step := range rec.Inputs {
		if t, _ := agent.StepTurn(step); t > last {
			last = t
		}
	}
	if last == 0 {
		return fmt.Sprintf("run %s made no model step", rec.WorkflowID)
	}
	return fmt.Sprintf("run %s never reached %s: its last model step is %s", rec.WorkflowID, agent.ModelStep(n), agent.ModelStep(last))
}

func statusName(s enumspb.WorkflowExecutionStatus) string {
	return enumspb.WorkflowExecutionStatus_name[int32(s)]
}

func forkRefused(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeForkRefused, nil)
}
