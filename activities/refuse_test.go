package activities_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestCallToolRefusesWhatTheWorkerDoesNotOffer: a tool step that does not
// match the worker's own tools is refused with the non-retryable
// StepRefused, one line naming the tool and what the worker says; nothing
// runs and the guard records nothing.
func TestCallToolRefusesWhatTheWorkerDoesNotOffer(t *testing.T) {
	t.Parallel()
	idem := func(in activities.StepInput) activities.StepInput { in.Step.Idempotent = true; return in }
	settle := func(s *agent.Settle) func(activities.StepInput) activities.StepInput {
		return func(in activities.StepInput) activities.StepInput { in.Step.Settle = s; return in }
	}
	ticket := `{"title":"t","body":"b"}`
	for _, tc := range []struct {
		name string
		in   activities.StepInput
		want string
	}{
		{"unknown tool", toolStep("drop_database", agent.KindRead, `{}`),
			`step tool/1/0/drop_database calls tool "drop_database", which this worker does not offer; it offers lookup, create_ticket, find_ticket`},
		{"write as a read", toolStep("create_ticket", agent.KindRead, ticket),
			`step tool/1/0/create_ticket runs tool "create_ticket" as a read; this worker knows create_ticket as a write, which runs only as a write`},
		{"write without a kind", toolStep("create_ticket", "", ticket),
			`step tool/1/0/create_ticket runs tool "create_ticket" as kind ""; a tool step is a write (as this worker knows create_ticket)`},
		{"write as idempotent", idem(toolStep("create_ticket", agent.KindWrite, ticket)),
			`step tool/1/0/create_ticket marks tool "create_ticket" idempotent; this worker's create_ticket is not, so it runs only through the write guard`},
		{"another key argument", settle(&agent.Settle{KeyArg: "title", Key: "k"})(toolStep("create_ticket", agent.KindWrite, ticket)),
			`step tool/1/0/create_ticket fills idempotency key argument "title" of tool "create_ticket"; this worker's create_ticket declares none`},
		{"a probe it does not declare", settle(&agent.Settle{Probe: &agent.Probe{Tool: "lookup"}})(toolStep("create_ticket", agent.KindWrite, ticket)),
			`step tool/1/0/create_ticket settles tool "create_ticket" with probe lookup; this worker's create_ticket declares no probe`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			acts, tickets := slowDemo(t, 0, 0)
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(acts)
			_, err := env.ExecuteActivity(acts.CallTool, tc.in)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeRefused || !appErr.NonRetryable() || appErr.Message() != tc.want {
				t.Fatalf("CallTool = %v, want non-retryable %s: %s", err, activities.ErrTypeRefused, tc.want)
			}
			if n := testenv.TicketCount(t, tickets); n != 0 {
				t.Fatalf("%d tickets filed, want 0", n)
			}
			if runs, err := acts.Guard.Store.List(); err != nil || len(runs) != 0 {
				t.Fatalf("the guard has journals %v (%v), want none", runs, err)
			}
		})
	}
	// What the worker offers runs: a read as a read, a write as a write.
	var suite testsuite.WorkflowTestSuite
	acts, tickets := slowDemo(t, 0, 0)
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	for _, in := range []activities.StepInput{toolStep("lookup", agent.KindRead, `{"topic":"vpn"}`), toolStep("lookup", agent.KindWrite, `{"topic":"vpn"}`), toolStep("create_ticket", agent.KindWrite, ticket)} {
		if _, err := env.ExecuteActivity(acts.CallTool, in); err != nil {
			t.Fatalf("%s as %s: %v", in.Step.Call.Name, in.Step.Kind, err)
		}
	}
	if n := testenv.TicketCount(t, tickets); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	if runs, err := acts.Guard.Store.List(); err != nil || len(runs) != 1 {
		t.Fatalf("the guard has journals %v (%v), want the write's", runs, err)
	}
}

// TestCallModelRefusesAnotherToolsKey: a model step names the tool specs
// the worker lists (their key), its own tools (""), or is refused.
func TestCallModelRefusesAnotherToolsKey(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	acts, _ := slowDemo(t, 0, 0)
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.ListTools)
	if err != nil {
		t.Fatal(err)
	}
	var cat activities.Catalog
	if err := v.Get(&cat); err != nil {
		t.Fatal(err)
	}
	own, err := acts.Exec.ToolsKey()
	if err != nil || own != cat.ToolsKey {
		t.Fatalf("ToolsKey = %s (%v), want the key ListTools recorded, %s", own, err, cat.ToolsKey)
	}
	step := func(key string) activities.StepInput {
		return activities.StepInput{Step: agent.Step{Name: "llm/1", Kind: agent.KindModel,
			Model: &agent.ModelInput{New: agent.UserMessages(hand.Prompt), Tools: key}}}
	}
	for _, key := range []string{cat.ToolsKey, ""} {
		if _, err := env.ExecuteActivity(acts.CallModel, step(key)); err != nil {
			t.Fatalf("model step with tools %q: %v", key, err)
		}
	}
	forged, _ := json.Marshal([]agent.ToolSpec{{Name: "create_ticket", Kind: agent.KindRead}})
	key, err := acts.Exec.Content.Put(t.Context(), forged)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.ExecuteActivity(acts.CallModel, step(key))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeRefused || !appErr.NonRetryable() ||
		!strings.HasPrefix(appErr.Message(), "step llm/1 offers the model tool specs "+key+"; this worker lists "+own) {
		t.Fatalf("CallModel with forged specs = %v, want non-retryable %s", err, activities.ErrTypeRefused)
	}
}
