package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// reapproveAfter is how long the campaign waits after approving a marker
// before it approves it again while the run still waits for it (a call to
// a busy dev server can fail).
const reapproveAfter = 3 * time.Second

// resettleAfter is how long the campaign waits before it settles an
// Indeterminate step again while the run is still Indeterminate there: the
// settlement may be refused while an earlier attempt of the write may still
// be running.
const resettleAfter = time.Second

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

// drive crashes the run at its point once it gets there, approves and
// settles it until it completes, and returns its final state and whether
// it crashed.
func (f *fleet) drive(ctx context.Context, o *Outcome) (workflows.State, bool, error) {
	approved, settled := map[string]time.Time{}, map[string]time.Time{}
	crashed := false
	for {
		if !crashed {
			var err error
			if crashed, err = f.crash(ctx, o); err != nil {
				return workflows.State{}, crashed, fmt.Errorf("crash at %s: %w", o.Cell.Point.Name, err)
			}
		}
		st, err := f.state(ctx)
		if err == nil {
			switch st.Status {
			case agent.StatusCompleted:
				return st, crashed, nil
			case agent.StatusFailed:
				return st, crashed, fmt.Errorf("run failed: %s", st.Reason)
			case agent.StatusAwaitingApproval:
				for _, p := range st.Pending {
					if o.Cell.Point == pointBetween && !crashed && p.Marker == o.Target {
						continue // the kill comes first
					}
					if time.Since(approved[p.Marker]) > reapproveAfter {
						approved[p.Marker] = time.Now()
						if err := f.tool(ctx, "approve", f.run, p.Marker); err != nil {
							f.logger.Warn("approve", "run_id", f.run, "err", err)
						}
					}
				}
			case agent.StatusIndeterminate:
				if time.Since(settled[st.Indeterminate]) < resettleAfter {
					break // settled a moment ago, or refused: the earlier attempt may still run
				}
				settled[st.Indeterminate] = time.Now()
				outcome, result, err := settlement(f.tickets, f.scenario, st.Indeterminate)
				if err != nil {
					return st, crashed, err
				}
				o.Settled = outcome
				if err := f.tool(ctx, append([]string{outcome, f.run, st.Indeterminate}, result...)...); err != nil {
					f.logger.Warn("settle", "run_id", f.run, "err", err)
				}
			}
		}
		if err := sleep(ctx); err != nil {
			return st, crashed, fmt.Errorf("run not completed (last %s): %w", st.Status, err)
		}
	}
}

// settlement settles an Indeterminate create_ticket step from the ground
// truth, the ticket file: done with the id of the ticket with the step's
// title when it exists, retry when it does not.
func settlement(path string, s Scenario, step string) (string, []string, error) {
	title := s.title(step)
	if title == "" {
		return "", nil, fmt.Errorf("the run is Indeterminate at %s, which is not a create_ticket call of the script", step)
	}
	ts, err := tools.ReadTickets(path)
	if err != nil {
		return "", nil, err
	}
	var ids []string
	for _, t := range ts {
		if t.Title == title {
			ids = append(ids, t.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "retry", nil, nil
	case 1:
		return "done", ids, nil
	}
	return "", nil, fmt.Errorf("%d tickets %q before settling %s", len(ids), title, step)
}

// checkTickets asserts one ticket per create_ticket call of the script,
// and an answer naming the last one; it fills o.Tickets and o.Duplicates.
func checkTickets(path string, s Scenario, answer string, o *Outcome) error {
	ts, err := tools.ReadTickets(path)
	if err != nil {
		return err
	}
	o.Tickets = len(ts)
	want := s.tickets()
	o.Duplicates = duplicates(ts, s)
	byTitle := map[string][]string{}
	for _, t := range ts {
		byTitle[t.Title] = append(byTitle[t.Title], t.ID)
	}
	for _, title := range want {
		if n := len(byTitle[title]); n != 1 {
			return fmt.Errorf("%d tickets %q, want 1 (%d tickets in all, want %d)", n, title, len(ts), len(want))
		}
	}
	if len(ts) != len(want) {
		return fmt.Errorf("%d tickets, want %d", len(ts), len(want))
	}
	if last := byTitle[want[len(want)-1]][0]; !strings.Contains(answer, last) {
		return fmt.Errorf("answer %q does not name %s", answer, last)
	}
	return nil
}

// duplicates counts the tickets beyond one per create_ticket call of the
// script: a second one of a title, and any of a title the script has not.
func duplicates(ts []tools.Ticket, s Scenario) int {
	n := map[string]int{}
	for _, title := range s.tickets() {
		n[title] = 1
	}
	d := 0
	for _, t := range ts {
		if n[t.Title]--; n[t.Title] < 0 {
			d++
		}
	}
	return d
}

// checkModel asserts that each model step of the script completed exactly
// once, given the completions per step; it fills o.ModelSteps and
// o.RepeatedModel.
func checkModel(completed map[string]int, s Scenario, o *Outcome) error {
	for _, n := range completed {
		if n > 0 {
			o.ModelSteps++
		}
		if n > 1 {
			o.RepeatedModel++
		}
	}
	if o.RepeatedModel > 0 {
		return fmt.Errorf("a model step completed more than once: %v", completed)
	}
	for _, step := range s.steps("") {
		if completed[step] != 1 {
			return fmt.Errorf("model steps %v, want each of llm/1..%d once", completed, len(s.Script.Turns))
		}
	}
	if len(completed) != len(s.Script.Turns) {
		return fmt.Errorf("model steps %v, want llm/1..%d", completed, len(s.Script.Turns))
	}
	return nil
}

// checkSettled asserts that the run was Indeterminate only at a point
// where a write's effect really was uncertain.
func checkSettled(o *Outcome) error {
	if o.Settled != "" && !o.Cell.Point.Uncertain {
		return fmt.Errorf("the run was Indeterminate (settled with %s) at %s, where no write was uncertain", o.Settled, o.Cell.Point.Name)
	}
	return nil
}

// check asserts the trial's invariants on a completed run.
func (f *fleet) check(ctx context.Context, o *Outcome, st workflows.State) error {
	completed, err := f.modelCompletions(ctx)
	if err != nil {
		return err
	}
	if err := checkModel(completed, f.scenario, o); err != nil {
		return err
	}
	if err := checkTickets(f.tickets, f.scenario, st.Answer, o); err != nil {
		return err
	}
	return checkSettled(o)
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
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
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
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
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
