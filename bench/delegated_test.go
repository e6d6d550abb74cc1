package main

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestDelegatedQuick runs the delegated section alone, as -quick sizes
// it: every run completes with its steps and model calls (the section
// checks them, and that each child ran ListAgentTools and one model
// step), the time row carries the goal, and the figures say what a child
// run is: a middle step of more time, and more history, than a tool step,
// and one activity more per run (the parent's 3 and the child's 2 against 4).
func TestDelegatedQuick(t *testing.T) {
	rows, err := delegatedStep(t.Context(), sectionEnv(t), paramsFor(true).deleg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[0].Goal != delegatedGoal || !strings.HasPrefix(rows[0].Figure, "ms per run, delegated vs direct") {
		t.Fatalf("rows %+v; want 6, the first the run time with the %.2f goal", rows, delegatedGoal)
	}
	for _, r := range rows {
		if r.Measured <= 0 || r.Baseline <= 0 || r.Missing != "" {
			t.Errorf("%s: measured %v, baseline %v; want both measured", r.Figure, r.Measured, r.Baseline)
		}
	}
	// The middle step's own time, not the whole run's: two rounds of runs
	// of about 150 ms, beside the other packages' tests, order two totals
	// only some 10 % apart by chance (a CI run measured 157 vs 166 ms),
	// while the agent step against the tool step is some 20 times over.
	for _, i := range []int{2, 3, 4} { // middle step, history bytes, events
		if rows[i].Ratio() <= 1 {
			t.Errorf("%s: ratio %.2f; a child run costs more than a tool step", rows[i].Figure, rows[i].Ratio())
		}
	}
	if a := rows[5]; a.Measured != 5 || a.Baseline != 4 {
		t.Errorf("activities per run: delegated tree %v, direct %v; want 5 and 4", a.Measured, a.Baseline)
	}
	t.Logf("%+v", rows)
}

// TestTaskModelNamesAnUnknownTask: the section's model refuses a run
// whose task has no script, naming the task.
func TestTaskModelNamesAnUnknownTask(t *testing.T) {
	m := newTaskModel(delegatedScripts())
	_, err := m.Complete(t.Context(), agent.ModelRequest{Messages: agent.UserMessages("something else")})
	if err == nil || !strings.Contains(err.Error(), `"something else"`) {
		t.Fatalf("err %v; want one naming the task", err)
	}
	reply, err := m.Complete(t.Context(), agent.ModelRequest{Messages: agent.UserMessages(childTask)})
	if err != nil || reply.Message.Content != childAnswer {
		t.Fatalf("child's reply %+v, %v; want %q", reply.Message, err, childAnswer)
	}
}
