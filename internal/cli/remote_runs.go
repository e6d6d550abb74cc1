package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

func (r *Remote) standing(ctx context.Context, runID string) (agent.Outcome, error) {
	st, err := r.state(ctx, runID)
	return outcomeOf(st), err
}

// step finds a step in the run's history (findStep).
func (r *Remote) step(ctx context.Context, runID, name string) (agent.Step, json.RawMessage, error) {
	return r.findStep(ctx, runID, name)
}

// content reads refs from the content store, which must be the workers'
// (AGENTRUN_JOURNAL).
func (r *Remote) content() (*execute.Executor, error) {
	store, err := r.Settings.Content()
	if err != nil {
		return nil, err
	}
	return &execute.Executor{Content: store}, nil
}

// cancelWait bounds how long cancel waits for the run to end.
const cancelWait = 30 * time.Second

// cancel requests the cancellation of a running run (Temporal's own
// cancel, as `temporal workflow cancel` sends it) and waits for the run to
// end, printing how it ended.
func (r *Remote) cancel(ctx context.Context, w io.Writer, runID string) error {
	var ended *agentrun.EndedError
	err := r.client().Run(runID).Cancel(ctx)
	switch {
	case errors.As(err, &ended):
		return fmt.Errorf("cancel refused: run %s is already %s", runID, ended.Status)
	case err != nil:
		return r.clientError(err, runID)
	}
	wctx, stop := context.WithTimeout(ctx, cancelWait)
	defer stop()
	for {
		desc, err := r.describe(wctx, runID)
		if err == nil && desc.status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return r.closed(ctx, w, runID)
		}
		select {
		case <-wctx.Done():
			fmt.Fprintf(w, "cancel requested for run %s; it ends Cancelled once a worker on task queue %s picks it up\n  Web UI: %s\n", runID, r.Settings.TaskQueue, r.Link(runID))
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *Remote) list(ctx context.Context, w io.Writer) error {
	query := workflows.WaitingQuery()
	var token []byte
	type waiting struct{ id, status, step, parent string }
	var runs []waiting
	for {
		resp, err := r.Conn.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: r.Conn.Namespace, Query: query, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			sa := e.GetSearchAttributes().GetIndexedFields()
			var status, step string
			if p := sa[operator.StatusAttribute]; p != nil {
				_ = json.Unmarshal(p.GetData(), &status)
			}
			if p := sa[operator.StepAttribute]; p != nil {
				_ = json.Unmarshal(p.GetData(), &step)
			}
			runs = append(runs, waiting{e.GetExecution().GetWorkflowId(), status, step, e.GetParentExecution().GetWorkflowId()})
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	// A child run that waits is listed under its parent (which shows the
	// same wait), indented one level per generation.
	listed := map[string]bool{}
	var print func(r waiting, depth int)
	print = func(r waiting, depth int) {
		listed[r.id] = true
		fmt.Fprintf(w, "%s%s\t%s\t%s\n", strings.Repeat("  ", depth), r.id, r.status, r.step)
		for _, c := range runs {
			if c.parent == r.id && !listed[c.id] {
				print(c, depth+1)
			}
		}
	}
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.id] = true
	}
	for _, r := range runs {
		if !listed[r.id] && !ids[r.parent] {
			print(r, 0)
		}
	}
	for _, r := range runs { // a loop of parents, which Temporal never makes
		if !listed[r.id] {
			print(r, 0)
		}
	}
	if len(runs) == 0 {
		fmt.Fprintln(w, "no run waits on a person")
	}
	return nil
}

func (r *Remote) show(ctx context.Context, w io.Writer, runID string) error {
	if err := operator.ValidRunID(runID); err != nil {
		return usagef("%v", err)
	}
	desc, err := r.describe(ctx, runID)
	if err != nil {
		return err
	}
	st, err := r.state(ctx, runID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.showFromHistory(ctx, w, runID, desc, err)
	}
	v := runView{
		Header:  fmt.Sprintf("run %s: %s (workflow %s)", runID, st.Status, workflowStatus(desc.status)),
		Outcome: outcomeOf(st),
	}
	if n := st.StepCount - len(st.Steps); n > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("(%s earlier; see one with --step STEP)", plural(n, "step")))
	}
	for _, s := range st.Steps {
		note := ""
		if s.Reconciled {
			note = " (reconciled)"
		}
		if s.Settled != nil {
			note = " (" + s.Settled.String() + ")"
		}
		v.Steps = append(v.Steps, fmt.Sprintf("%-28s %-5s %s%s", s.Name, s.Kind, s.Preview, note))
	}
	if f := st.Fork; f != nil {
		v.Tail = append(v.Tail, "lineage: "+f.String())
	}
	if f := st.Fence; f != nil {
		// An earlier attempt of a write may still act: what the run waits
		// for, or until when a retry is refused.
		what := "a retry is refused until then"
		if f.Waiting {
			what = "the run waits until then before it settles the write by itself"
		}
		v.Tail = append(v.Tail, fmt.Sprintf("fence: %s; %s", f.String(), what))
	}
	for _, e := range st.Expired {
		v.Tail = append(v.Tail, fmt.Sprintf("approval expired: %s (%s) waited %s and was denied", e.Marker, e.Tool, e.After))
	}
	if rt := st.Retry; rt != nil {
		v.Tail = append(v.Tail, "retrying "+rt.String())
	}
	if lw := st.LimitWait; lw != nil {
		v.Tail = append(v.Tail, "rate limit: "+lw.At(time.Now()))
	}
	turns, used := st.Used() // its child runs' included
	v.Tail = append(v.Tail, budgetLine(turns, used, st.Budget))
	for _, rj := range st.Rejected {
		v.Tail = append(v.Tail, fmt.Sprintf("rejected %s %s: %s", rj.Signal, rj.Payload, rj.Reason))
	}
	v.Tail = append(v.Tail, "Web UI: "+r.Link(runID))
	printRun(w, r.op(), runID, v)
	return nil
}
