package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/llm"
)

// The catalog a run records once at its start: the model and the tools on offer.

// Catalog is what a run records once at its start: the model's name (for
// step summaries), the tools offered to the model as the policy sees them
// (names, kinds, approval; descriptions and schemas are in the content
// store under ToolsKey, which model steps refer to).
type Catalog struct {
	Model    string           `json:"model"`
	Tools    []agent.ToolSpec `json:"tools"`
	ToolsKey string           `json:"tools_key,omitempty"`
	// Timeouts holds each tool's timeout, so that a step's activity
	// outlives the call it makes.
	Timeouts map[string]time.Duration `json:"timeouts,omitempty"`
	// ModelTimeout is the model's request timeout, so that a model step's
	// activity outlives the request; 0 in runs recorded before it was.
	ModelTimeout time.Duration `json:"model_timeout,omitempty"`
	// LimitWait is how long a model step may wait for its rate limit's
	// slot (the models file's "limits"), added to its activity's timeout
	// so that the wait is no failed attempt; 0 when the worker's models
	// declare no limits, and in runs recorded before it was.
	LimitWait time.Duration `json:"limit_wait,omitempty"`
	// FailOnCut makes a final answer cut off by the model's length limit
	// fail the run (AGENTRUN_FAIL_ON_CUT_ANSWER on the worker that listed
	// the tools); recorded once, so every worker decides alike.
	FailOnCut bool `json:"fail_on_cut,omitempty"`
	// FailOnEmpty makes a final answer with no text fail the run
	// (AGENTRUN_FAIL_ON_EMPTY_ANSWER on the worker that listed the tools);
	// recorded once, like FailOnCut. False in runs recorded before it was.
	FailOnEmpty bool `json:"fail_on_empty,omitempty"`
	// Agent is the agent a run runs: an agent tool's for a child run, or
	// the one a run named at its start ("" for the worker's default
	// agent). System is the agent's system prompt, from the configuration
	// of the worker that listed the tools; a run puts it first.
	Agent  string `json:"agent,omitempty"`
	System string `json:"system,omitempty"`
}

// ListTools returns the model's name and the tools on offer, and keeps
// their full specs in the content store. It heartbeats like the steps, so
// that a worker that dies holding it is noticed within the heartbeat
// timeout.
func (a *Activities) ListTools(ctx context.Context) (Catalog, error) {
	var c Catalog
	_, err := a.heartbeating(ctx, "tools", func(ctx context.Context) (json.RawMessage, error) {
		if err := a.holdList(ctx); err != nil { // a test-only crash point; inert unless set
			return nil, err
		}
		var err error
		c, err = a.listTools(ctx)
		return nil, err
	})
	c.System = a.Exec.System
	return c, err
}

func (a *Activities) listTools(ctx context.Context) (Catalog, error) {
	key, err := a.Exec.PutTools(ctx)
	if err != nil {
		return Catalog{}, fmt.Errorf("keep the tool specs: %w", err)
	}
	c := Catalog{Model: a.Exec.Model.Name(), ToolsKey: key, Timeouts: map[string]time.Duration{},
		ModelTimeout: cmp.Or(a.Exec.ModelTimeout, llm.DefaultTimeout), LimitWait: a.Exec.LimitWait, FailOnCut: a.Exec.FailOnCut, FailOnEmpty: a.Exec.FailOnEmpty}
	for _, t := range a.Exec.Tools.Specs() {
		t.Description, t.Schema = "", nil
		c.Tools = append(c.Tools, t)
		c.Timeouts[t.Name] = a.Exec.Tools.Timeout(t.Name)
	}
	return c, nil
}

// holdList holds ListTools as the test-only hook AGENTRUN_TEST_HOLD_LIST
// says (testhook.Hooks.HoldList) when the context carries it, or returns
// nil at once (the production case).
func (a *Activities) holdList(ctx context.Context) error {
	if !testhook.From(ctx).HoldList {
		return nil
	}
	info := activity.GetInfo(ctx)
	a.log(ctx).Warn("hold in tools: waiting to be killed", "run_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	<-ctx.Done()
	return context.Cause(ctx)
}
