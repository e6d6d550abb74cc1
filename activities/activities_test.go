package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// slowDemo returns the demo tools, each sleeping delay inside its call and
// bounded by timeout.
func slowDemo(t *testing.T, delay, timeout time.Duration) (*activities.Activities, string) {
	t.Helper()
	tickets := filepath.Join(t.TempDir(), "tickets.jsonl")
	var ts []tools.Tool
	for _, tool := range tools.Demo(tools.DemoConfig{Tickets: tickets, Delay: delay}) {
		ts = append(ts, tools.Apply(tool, tools.Override{Timeout: timeout}))
	}
	set, err := tools.NewSet(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return &activities.Activities{
		Exec:  &execute.Executor{Model: llm.NewScripted(llm.HandExample()), Tools: set, Content: content.NewMemStore()},
		Guard: &journal.Guard{Store: journal.NewMemStore()},
	}, tickets
}

func toolStep(name string, kind agent.Kind, args string) activities.StepInput {
	return activities.StepInput{Step: agent.Step{
		Name: "tool/1/0/" + name, Kind: kind,
		Call: &agent.ToolCall{ID: "c1", Name: name, Args: json.RawMessage(args)},
	}, Generation: 1, RunKey: "first-run"}
}

// TestToolTimeouts: a read that outlasts its tool's timeout becomes an
// error result the model sees; a write that does is Indeterminate at once
// (non-retryable), though its ticket was written.
func TestToolTimeouts(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	acts, tickets := slowDemo(t, 2*time.Second, 100*time.Millisecond)

	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.CallTool, toolStep("lookup", agent.KindRead, `{"topic":"vpn"}`))
	if err != nil {
		t.Fatalf("read that timed out: %v, want an error result", err)
	}
	var raw json.RawMessage
	if err := v.Get(&raw); err != nil {
		t.Fatal(err)
	}
	res, err := agent.DecodeToolResult(raw)
	if err != nil || !res.IsError || res.Content != `tool "lookup" did not finish within its timeout of 100ms` {
		t.Fatalf("read result %+v (%v), want the timeout as an error result", res, err)
	}

	env = suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	_, err = env.ExecuteActivity(acts.CallTool, toolStep("create_ticket", agent.KindWrite, `{"title":"t"}`))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeIndeterminate || !appErr.NonRetryable() {
		t.Fatalf("write that timed out: %v, want a non-retryable %s error", err, activities.ErrTypeIndeterminate)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1 (the write took effect before its timeout)", n)
	}
}

// TestWriteGuard: the guard returns a recorded result without running the
// tool, and a start without a result as a non-retryable Indeterminate.
func TestWriteGuard(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	acts, tickets := slowDemo(t, 0, time.Minute)
	in := toolStep("create_ticket", agent.KindWrite, `{"title":"t"}`)
	run := func() (json.RawMessage, error) {
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		v, err := env.ExecuteActivity(acts.CallTool, in)
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		return raw, v.Get(&raw)
	}
	first, err := run()
	if err != nil {
		t.Fatal(err)
	}
	again, err := run() // the worker died after the record, before reporting
	if err != nil || string(again) != string(first) {
		t.Fatalf("second attempt: %s, %v; want the recorded %s", again, err, first)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}

	// A start without a result, as a killed worker leaves it.
	in.Step.Name = hand.TicketStep
	store := acts.Guard.Store
	recs, _ := store.Load("default-test-workflow-id")
	if err := store.Append("default-test-workflow-id", len(recs), journal.Record{Type: journal.StepStarted, Step: activities.GuardStep(in), Kind: agent.KindWrite}); err != nil {
		t.Fatal(err)
	}
	_, err = run()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeIndeterminate || !appErr.NonRetryable() {
		t.Fatalf("attempt after a start without a result: %v, want Indeterminate", err)
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("tickets: %d, want still 1", n)
	}
	if got := activities.GuardStep(activities.StepInput{Step: in.Step, Generation: 2, RunKey: "k"}); got != "k/tool/2/0/create_ticket#2" {
		t.Fatalf("GuardStep = %s", got)
	}
}

// failingModel fails every request with an error of one class.
type failingModel struct{ class llm.Class }

func (failingModel) Name() string { return "failing" }

func (m failingModel) Complete(context.Context, agent.ModelRequest) (agent.ModelReply, error) {
	return agent.ModelReply{}, &llm.Error{Class: m.class, Message: "no"}
}

// TestFinalFailuresAreNonRetryable: a model step failing with an error of
// a final class (NonRetryableModelErrors) fails non-retryable, with the
// class as its type, so that the server does not retry it though the
// step's retry policy lists no error types (workflows.stepOptions); a
// retryable class stays retryable. (Indeterminate: TestIndeterminate*.)
func TestFinalFailuresAreNonRetryable(t *testing.T) {
	t.Parallel()
	classes := append([]string{string(llm.ClassRateLimit), string(llm.ClassServer)}, activities.NonRetryableModelErrors...)
	for _, class := range classes {
		var suite testsuite.WorkflowTestSuite
		acts, _ := slowDemo(t, 0, 0)
		acts.Exec.Model = failingModel{llm.Class(class)}
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		in := activities.StepInput{Step: agent.Step{Name: "llm/1", Kind: agent.KindModel, Model: &agent.ModelInput{New: agent.UserMessages("hi")}}}
		_, err := env.ExecuteActivity(acts.CallModel, in)
		final := slices.Contains(activities.NonRetryableModelErrors, class)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != class || appErr.NonRetryable() != final {
			t.Errorf("%s: CallModel = %v; want an error of type %s, non-retryable %v", class, err, class, final)
		}
	}
}
