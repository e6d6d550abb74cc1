package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// reapproveAfter is how long the campaign waits after an approval before
// it approves again a run still awaiting one.
const reapproveAfter = 3 * time.Second

// state queries the run's state.
func (f *fleet) state(ctx context.Context) (workflows.State, error) {
	var st workflows.State
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := f.client.QueryWorkflow(qctx, f.run, "", workflows.QueryState)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// waitStatus polls the run until it has status.
func (f *fleet) waitStatus(ctx context.Context, status agent.Status) (workflows.State, error) {
	for {
		st, err := f.state(ctx)
		if err == nil && st.Status == status {
			return st, nil
		}
		if err := sleep(ctx); err != nil {
			return st, fmt.Errorf("%s not %s (last %s): %w", f.run, status, st.Status, err)
		}
	}
}

// waitStarted polls the run until an activity of type typ is STARTED on a
// worker and returns the worker's identity.
func (f *fleet) waitStarted(ctx context.Context, typ string) (string, error) {
	for {
		desc, err := f.client.DescribeWorkflow(ctx, f.run, "")
		if err == nil {
			for _, a := range desc.RawResponse.GetPendingActivities() {
				if a.GetActivityType().GetName() == typ && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && a.GetLastWorkerIdentity() != "" {
					return a.GetLastWorkerIdentity(), nil
				}
			}
		}
		if err := sleep(ctx); err != nil {
			return "", fmt.Errorf("no %s started: %w", typ, err)
		}
	}
}

// approve approves the run's pending calls with the reconcile program.
func (f *fleet) approve(ctx context.Context) error {
	st, err := f.state(ctx)
	if err != nil {
		return err
	}
	for _, p := range st.Pending {
		if err := f.tool(ctx, "reconcile", "approve", f.run, p.Marker); err != nil {
			return err
		}
	}
	return nil
}

// drive approves and settles the run until it completes, and returns its
// final state.
func (f *fleet) drive(ctx context.Context, o *Outcome) (workflows.State, error) {
	var approved time.Time
	for {
		st, err := f.state(ctx)
		if err == nil {
			switch st.Status {
			case agent.StatusCompleted:
				return st, nil
			case agent.StatusFailed:
				return st, fmt.Errorf("run failed: %s", st.Reason)
			case agent.StatusAwaitingApproval:
				if time.Since(approved) > reapproveAfter {
					approved = time.Now()
					if err := f.approve(ctx); err != nil {
						f.logger.Warn("approve", "run_id", f.run, "err", err)
					}
				}
			case agent.StatusIndeterminate:
				if err := f.settle(ctx, o, st.Indeterminate); err != nil {
					f.logger.Warn("settle", "run_id", f.run, "err", err)
				}
			}
		}
		if err := sleep(ctx); err != nil {
			return st, fmt.Errorf("run not completed (last %s): %w", st.Status, err)
		}
	}
}

// settle settles an Indeterminate step from the ground truth, the ticket
// file: done with the ticket's id when it exists, retry when it does not.
func (f *fleet) settle(ctx context.Context, o *Outcome, step string) error {
	ts, err := tools.ReadTickets(f.tickets)
	if err != nil {
		return err
	}
	switch len(ts) {
	case 0:
		o.Settled = "retry"
		return f.tool(ctx, "reconcile", "retry", f.run, step)
	case 1:
		o.Settled = "done"
		return f.tool(ctx, "reconcile", "done", f.run, step, ts[0].ID)
	}
	return fmt.Errorf("%d tickets before settling %s", len(ts), step)
}

// check asserts the trial's invariants on a completed run.
func (f *fleet) check(ctx context.Context, o *Outcome, st workflows.State) error {
	ts, err := tools.ReadTickets(f.tickets)
	if err != nil {
		return err
	}
	o.Tickets = len(ts)
	completed, err := f.modelCompletions(ctx)
	if err != nil {
		return err
	}
	for _, n := range completed {
		if n > 1 {
			o.RepeatedModel++
		}
	}
	switch {
	case len(ts) != 1:
		return fmt.Errorf("%d tickets, want 1", len(ts))
	case !strings.Contains(st.Answer, ts[0].ID):
		return fmt.Errorf("answer %q does not name %s", st.Answer, ts[0].ID)
	case o.RepeatedModel > 0:
		return fmt.Errorf("a model step completed more than once: %v", completed)
	case len(completed) != 3:
		return fmt.Errorf("model steps %v, want llm/1..3", completed)
	case o.Settled != "" && !o.Point.Uncertain:
		return fmt.Errorf("the run was Indeterminate (settled with %s) at %s, where no write was uncertain", o.Settled, o.Point.Name)
	}
	return nil
}

// modelCompletions counts the ActivityTaskCompleted events of each model
// step (CallModel activity id) in the run's history.
func (f *fleet) modelCompletions(ctx context.Context) (map[string]int, error) {
	ids := map[int64]string{}
	n := map[string]int{}
	it := f.client.GetWorkflowHistory(ctx, f.run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", f.run, err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CallModel" {
			ids[e.GetEventId()] = a.GetActivityId()
			n[a.GetActivityId()] += 0
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
			if id, ok := ids[a.GetScheduledEventId()]; ok {
				n[id]++
			}
		}
	}
	return n, nil
}

// lastModelWorker returns the identity of the worker that ran the newest
// CallModel activity.
func (f *fleet) lastModelWorker(ctx context.Context) (string, error) {
	model := map[int64]bool{}
	identity := ""
	it := f.client.GetWorkflowHistory(ctx, f.run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return "", fmt.Errorf("history of %s: %w", f.run, err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CallModel" {
			model[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && model[a.GetScheduledEventId()] {
			identity = a.GetIdentity()
		}
	}
	if identity == "" {
		return "", fmt.Errorf("%s: no model step started", f.run)
	}
	return identity, nil
}
