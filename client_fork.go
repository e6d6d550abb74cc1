package agentrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// ForkOfKey is the search attribute a fork carries: the run it goes on
// from. `AgentRunForkOf = "RUN"` lists RUN's forks.
var ForkOfKey = workflows.ForkOfKey

// ErrForkRefused matches the error of a fork that could not start: its
// origin, step or agent is wrong, or it would make again writes of the
// origin that nobody acknowledged. Nothing ran.
var ErrForkRefused = errors.New("fork refused")

// ForkError is a fork that could not start, in the words of the worker
// that read its origin: one line. It matches ErrForkRefused.
type ForkError struct {
	RunID  string
	Reason string
}

func (e *ForkError) Error() string { return e.Reason }

// Is makes a ForkError match ErrForkRefused.
func (e *ForkError) Is(target error) bool { return target == ErrForkRefused }

// fork is the fork's start input.
func (o ForkOptions) fork(origin string) (agent.Fork, error) {
	f := agent.Fork{Origin: origin, From: o.From, Agent: o.Agent, AckWrites: o.AckWrites, Replay: o.Replay}
	if o.System != "" {
		s := o.System
		f.System = &s
	}
	if err := operator.ValidRunID(origin); err != nil {
		return f, fmt.Errorf("fork: %w", err)
	}
	return f, f.Check()
}

// Fork starts a fork of the run origin, which must have ended: a new run
// whose steps before opts.From come from origin's record (no model is
// called and no tool runs for them) and which goes on live from there,
// on opts.Agent or with opts.System when set. A worker reads the origin's
// history; Fork returns once the fork has started from it, or with a
// [*ForkError] (ErrForkRefused) naming why it could not: an unknown run
// or step, a run still in flight, an unknown agent, or writes the origin
// made at or after opts.From that the fork may make again (acknowledge
// them with opts.AckWrites). The fork's budget counts only its own
// model calls.
func (c *Client) Fork(ctx context.Context, origin string, opts ForkOptions) (*Run, error) {
	f, err := opts.fork(origin)
	if err != nil {
		return nil, err
	}
	id := cmp.Or(opts.ID, agent.ForkID(f))
	if err := operator.ValidRunID(id); err != nil {
		return nil, fmt.Errorf("fork id: %w", err)
	}
	err = c.startRun(ctx, id, forkSummary(f), origin, workflows.Input{Fork: &f}, nil)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil, fmt.Errorf("fork %s: %w; give another id (ForkOptions.ID), or reach it with Client.Run", id, ErrRunExists)
	}
	if err != nil && strings.Contains(err.Error(), operator.ForkOfAttribute) {
		return nil, fmt.Errorf("fork %s: %w; the namespace lacks the search attribute %s: create it with EnsureSearchAttributes, or temporal operator search-attribute create --name %s --type Keyword", id, err, operator.ForkOfAttribute, operator.ForkOfAttribute)
	}
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", id, err)
	}
	run := c.Run(id)
	return run, run.forked(ctx)
}

// forked waits until the fork has read its origin: it shows its lineage,
// or it ended, refused. It asks the run's state at 50 ms, then less often
// (each query is an action a Temporal Cloud bill counts).
func (r *Run) forked(ctx context.Context) error {
	for every := 50 * time.Millisecond; ; every = min(2*every, time.Second) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := r.State(qctx)
		cancel()
		switch {
		case err == nil && st.Fork != nil:
			return nil
		case err == nil && st.Status == agent.StatusFailed:
			return &ForkError{RunID: r.id, Reason: st.Reason}
		case ctx.Err() != nil:
			return fmt.Errorf("fork %s: started, not yet past reading its origin: %w", r.id, ctx.Err())
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

// forkSummary is the fork's summary in the Web UI.
func forkSummary(f agent.Fork) string {
	s := (&workflows.ForkState{Origin: f.Origin, From: f.From, Agent: f.Agent, System: f.System != nil, Replay: f.Replay}).String()
	if f.AckWrites {
		s += ", its origin's writes after that acknowledged"
	}
	return s
}

// Drift returns how the fork forkID departs from its origin: the first
// live model step whose reply differs, the calls the origin never made,
// whether the answer changed (agent.CompareRuns, as on the local engine).
// It reads both runs' histories (ClientOptions.DataConverter decodes
// them); a run that is no fork is an error.
func (c *Client) Drift(ctx context.Context, forkID string) (Drift, error) {
	dc := c.opts.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	fork, err := activities.ReadRecorded(ctx, c.c, dc, forkID, 1)
	if err != nil {
		return Drift{}, c.wrap("read", forkID, err)
	}
	if fork.Fork == nil {
		return Drift{}, fmt.Errorf("drift of %s: it is no fork", forkID)
	}
	origin, err := activities.ReadRecorded(ctx, c.c, dc, fork.Fork.Origin, 1)
	if err != nil {
		return Drift{}, c.wrap("read", fork.Fork.Origin, err)
	}
	return agent.CompareRuns(fork.Fork.Origin, forkID, fork.Fork.From, origin.Results, fork.Results), nil
}
