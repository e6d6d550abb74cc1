package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/progress"
)

// Forks: a run whose input names a finished run and a step of it
// (Input.Fork) starts where that step began, from what the origin's
// history recorded (activities.ForkPoint, a local activity: the worker
// reads the history itself), and goes on live from that step. The steps
// keep the origin's names; the budget counts only the fork's own model
// calls (ForkState.Base).

// forkTimeout bounds reading the origin's history.
const forkTimeout = 2 * time.Minute

// ForkState is a fork's lineage and what its live part needs, carried
// across continue-as-new in the state.
type ForkState struct {
	// Origin is the run forked, From the fork's first live step.
	Origin string `json:"origin"`
	From   string `json:"from"`
	// Agent is the agent of the live steps when the fork changed it;
	// System is set when the fork gave a system prompt of its own.
	Agent  string `json:"agent,omitempty"`
	System bool   `json:"system,omitempty"`
	// Replay is set on an evaluation: no tool runs, the origin answers.
	Replay bool `json:"replay,omitempty"`
	// Acked are the origin's writes at or after From that a person
	// acknowledged the fork may make again.
	Acked []agent.Write `json:"acked,omitempty"`
	// Base is the model calls before the fork's live part.
	Base int `json:"base"`
	// Table is the content key of the origin's calls (replay);
	// Used the origin's steps whose answers the replay gave.
	Table string   `json:"table,omitempty"`
	Used  []string `json:"used,omitempty"`
}

// String says the lineage in one line: "fork of order-7 from llm/3 (agent
// other, a new system prompt; acknowledged writes: tool/2/0/create_ticket)".
func (f *ForkState) String() string {
	s := "fork of " + f.Origin + " from " + f.From
	var changed []string
	if f.Agent != "" {
		changed = append(changed, "agent "+f.Agent)
	}
	if f.System {
		changed = append(changed, "a new system prompt")
	}
	if f.Replay {
		changed = append(changed, "replay: no tool runs, the origin answers")
	}
	if len(f.Acked) > 0 {
		steps := make([]string, len(f.Acked))
		for i, w := range f.Acked {
			steps[i] = w.Step
		}
		changed = append(changed, "acknowledged writes: "+strings.Join(steps, ", "))
	}
	if len(changed) > 0 {
		s += " (" + strings.Join(changed, "; ") + ")"
	}
	return s
}

// forkBase is the model calls the run's record holds from its origin.
func (r *execution) forkBase() int {
	if r.state.Fork == nil {
		return 0
	}
	return r.state.Fork.Base
}

// refuseFork says why a fork's input is refused, "" when it is not one or
// is well-formed.
func (r *execution) refuseFork() string {
	f := r.in.Fork
	switch {
	case f == nil:
		return ""
	case r.delegated:
		return "the input sets fork, and this run is a child run of an agent tool: fork the run that called it"
	case len(r.in.Messages) > 0:
		return "the input sets fork and messages: a fork's messages come from its origin; start it without messages"
	case r.in.Agent != "":
		return "the input sets fork and agent: name the fork's agent in fork.agent"
	}
	if err := f.Check(); err != nil {
		return err.Error()
	}
	return ""
}

// readFork reads where the fork starts (activities.ForkPoint); the agent
// its live steps run.
func (r *execution) readFork() (activities.ForkStart, error) {
	lao := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: forkTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{activities.ErrTypeForkRefused}},
	})
	var fs activities.ForkStart
	err := workflow.ExecuteLocalActivity(lao, activities.NameForkPoint, *r.in.Fork).Get(r.ctx, &fs)
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return fs, errors.New(app.Message())
	}
	return fs, err
}

// startFork takes the fork's start point, read by readFork.
func (r *execution) startFork(fs activities.ForkStart) {
	f := r.in.Fork
	p := fs.Point
	r.turn.cp = p.Checkpoint
	for step, res := range p.Results {
		r.turn.facts.Results[step] = res
	}
	r.turn.models = p.Checkpoint.Turn
	st := &ForkState{Origin: f.Origin, From: f.From, System: f.System != nil, Replay: f.Replay, Base: p.Base, Table: fs.Table}
	if f.Agent != "" {
		st.Agent = f.Agent
	}
	if p.Acked {
		st.Acked = p.Hazards
	}
	r.state.Fork = st
	r.state.Turns = 0
	workflow.GetLogger(r.ctx).Info("forked", "origin", f.Origin, "from", f.From, "agent", fs.Agent, "replay", f.Replay, "acked_writes", len(st.Acked))
}

// replayed answers tool step s of a replay from the origin's record
// (activities.ReplayCall) and records the answer as its result.
func (r *execution) replayed(s agent.Step) error {
	st := r.state.Fork
	r.event(progress.Event{Type: progress.EventStepStarted, Step: s.Name, Kind: s.Kind})
	lao := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: prepareTimeout,
		RetryPolicy:         retryPolicy(stepAttempts),
	})
	var ans activities.ReplayAnswer
	in := activities.ReplayInput{Origin: st.Origin, Table: st.Table, Step: s.Name, Call: *s.Call, Used: st.Used}
	if err := workflow.ExecuteLocalActivity(lao, activities.NameReplayCall, in).Get(r.ctx, &ans); err != nil {
		return err
	}
	if ans.From != "" {
		st.Used = append(st.Used, ans.From)
	}
	r.completed(s, 0, json.RawMessage(ans.Result))
	return nil
}
