package workflows_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

const (
	prompt     = hand.Prompt
	ticketStep = hand.TicketStep
)

type harness struct {
	env     *testsuite.TestWorkflowEnvironment
	dc      converter.DataConverter // env's: plain, or the codec's under make test-encrypted
	acts    *activities.Activities
	tickets string
	mu      sync.Mutex
	started map[string]int           // activity starts by type
	ids     []string                 // activity ids in start order
	timeout map[string]time.Duration // start-to-close by activity id
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newScriptHarness(t, llm.HandExample())
}

// newScriptHarness is a harness whose model plays script.
func newScriptHarness(t *testing.T, script llm.Script) *harness {
	t.Helper()
	tickets := filepath.Join(t.TempDir(), "tickets.jsonl")
	set, err := tools.NewSet(tools.Demo(tools.DemoConfig{Tickets: tickets})...)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		acts: &activities.Activities{
			Exec:  &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: content.NewMemStore()},
			Guard: &journal.Guard{Store: journal.NewMemStore()},
			// The sdk's test environment takes no signals from activities.
			NoStream: true,
		},
		tickets: tickets,
		started: map[string]int{},
		timeout: map[string]time.Duration{},
	}
	h.newEnv(t)
	// A step's retry notices reach the run as they would from a worker.
	h.acts.SignalRun = func(_ context.Context, n activities.RetryNotice) error {
		h.env.SignalWorkflow(activities.RetrySignal, n)
		return nil
	}
	return h
}

// newEnv gives the harness a fresh test environment with the same
// activities and counters: the next execution of a run that continued as
// new.
func (h *harness) newEnv(t *testing.T) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	h.env = env
	// make test-encrypted: the same runs through the payload codec.
	cdc, err := testenv.SuiteCodec()
	if err != nil {
		t.Fatal(err)
	}
	h.dc = codec.DataConverter(cdc)
	env.SetDataConverter(h.dc)
	env.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	activities.Register(env, h.acts, false)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "hand-1"})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !strings.HasPrefix(info.ActivityType.Name, activities.Prefix) {
			t.Errorf("activity %q scheduled without agentrun's prefix %q", info.ActivityType.Name, activities.Prefix)
		}
		h.started[strings.TrimPrefix(info.ActivityType.Name, activities.Prefix)]++
		h.ids = append(h.ids, info.ActivityID)
		h.timeout[info.ActivityID] = info.StartToCloseTimeout
	})
}

func (h *harness) state(t *testing.T) workflows.State {
	t.Helper()
	v, err := h.env.QueryWorkflow(workflows.QueryState)
	if err != nil {
		t.Fatalf("query state: %v", err)
	}
	var s workflows.State
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func (h *harness) modelCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started["CallModel"]
}

func (h *harness) ticketCount(t *testing.T) int {
	t.Helper()
	return testenv.TicketCount(t, h.tickets)
}

func (h *harness) result(t *testing.T) workflows.Result {
	t.Helper()
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var r workflows.Result
	if err := h.env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// at schedules fn at workflow time d.
func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

// stateFromActivity queries the run's state from an activity's goroutine.
// The test environment runs a query on the caller's goroutine and marks
// the workflow read-only meanwhile, so a query racing the main loop can
// panic the workflow; a callback with no delay runs on the main loop.
func (h *harness) stateFromActivity(t *testing.T) workflows.State {
	t.Helper()
	got := make(chan workflows.State, 1)
	h.env.RegisterDelayedCallback(func() { got <- h.state(t) }, 0)
	select {
	case st := <-got:
		return st
	case <-time.After(5 * time.Second):
		t.Error("the state query did not run on the main loop within 5s")
		return workflows.State{}
	}
}

func (h *harness) run() {
	h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt)})
}

func jsonPayload(s string) converter.RawValue {
	return converter.NewRawValue(&commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     []byte(s),
	})
}

func TestHandExampleThroughSignals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval || len(s.Pending) != 1 || s.Pending[0].Marker != ticketStep {
			t.Errorf("before approval: %+v, want AwaitingApproval on %s", s, ticketStep)
		}
		if n := h.modelCalls(); n != 2 {
			t.Errorf("model calls before approval: %d, want 2", n)
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") {
		t.Fatalf("answer %q does not name TICKET-1", r.Answer)
	}
	if n := h.modelCalls(); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := h.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	want := []string{"tools", "llm/1", hand.LookupStep, "llm/2", ticketStep, "llm/3"}
	if strings.Join(h.ids, " ") != strings.Join(want, " ") {
		t.Fatalf("activity ids %v, want %v", h.ids, want)
	}
	// A tool step outlives its tool's timeout (2m by default) by a minute.
	if got := h.timeout[hand.LookupStep]; got != 3*time.Minute {
		t.Fatalf("lookup's start-to-close timeout %v, want 3m", got)
	}
	s := h.state(t)
	if s.Status != agent.StatusCompleted || len(s.Steps) != 5 || s.Usage.InputTokens == 0 || r.Usage != s.Usage {
		t.Fatalf("final state %+v, result %+v", s, r)
	}
}

func TestHandExampleThroughUpdates(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var rejected, completed []string
	var answer any
	cb := func(name string) *testsuite.TestUpdateCallback {
		return &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { rejected = append(rejected, name+": "+err.Error()) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("update %s failed: %v", name, err)
				}
				completed = append(completed, name)
				answer = v
			},
		}
	}
	h.at(time.Minute, func() {
		h.env.UpdateWorkflow(operator.SignalApprove, "u1", cb("wrong marker"), jsonPayload(`{"Marker":"tool/2/0/lookup"}`))
		h.env.UpdateWorkflow(operator.SignalApprove, "u2", cb("approve"), jsonPayload(`{"Marker":"`+ticketStep+`"}`))
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, model calls %d, tickets %d; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
	if len(rejected) != 1 || !strings.Contains(rejected[0], "is not awaiting approval; pending: "+ticketStep) {
		t.Fatalf("rejected updates %q, want the wrong marker refused naming the pending one", rejected)
	}
	if strings.Join(completed, ",") != "approve" {
		t.Fatalf("completed updates %q, want approve", completed)
	}
	// The answer is the state once the run acted on the approval: it runs
	// the ticket step.
	if st, ok := answer.(workflows.State); !ok || st.Status != agent.StatusRunning || len(st.Pending) != 0 || st.StepCount != 3 {
		t.Fatalf("approve answered %#v, want the state after it: Running, nothing pending, 3 steps", answer)
	}
	if s := h.state(t); len(s.Rejected) != 0 {
		t.Fatalf("a rejected update left a trace in state: %+v", s.Rejected)
	}
}

// TestBadOperatorInput: every class of bad payload is recorded as rejected
// with a reason, never counts as a decision, and never wedges the run.
func TestBadOperatorInput(t *testing.T) {
	t.Parallel()
	bad := []struct {
		signal  string
		payload converter.RawValue
		reason  string
	}{
		{operator.SignalApprove, converter.NewRawValue(nil), "approve has no payload"},
		{operator.SignalApprove, jsonPayload(`not json`), "invalid character"},
		{operator.SignalApprove, converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/plain")}, Data: []byte("x")}), `encoding "binary/plain"`},
		{operator.SignalApprove, jsonPayload(`{"Marker":7}`), "cannot unmarshal number"},
		{operator.SignalApprove, jsonPayload(`{}`), `marker "" is not a tool step`},
		{operator.SignalApprove, jsonPayload(`{"Makrer":"tool/2/0/create_ticket"}`), `unknown field "Makrer"`},
		{operator.SignalDeny, jsonPayload(`{"Marker":"tool/2/0/create_ticket"}`), "reason is empty"},
		{operator.SignalApprove, jsonPayload(`{"Marker":"tool/9/0/create_ticket"}`), "is not awaiting approval; pending: tool/2/0/create_ticket"},
		{operator.SignalReconcile, jsonPayload(`{"Step":"tool/1/0/lookup","Outcome":"done","Result":"x"}`), "is not indeterminate"},
		{operator.SignalReconcile, jsonPayload(`{"Step":"tool/2/0/create_ticket","Outcome":"maybe"}`), `want "done" or "retry"`},
	}
	h := newHarness(t)
	h.at(time.Minute, func() {
		for _, b := range bad {
			h.env.SignalWorkflow(b.signal, b.payload)
		}
	})
	h.at(2*time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval {
			t.Errorf("after bad input: %s, want AwaitingApproval", s.Status)
		}
		if len(s.Rejected) != len(bad) {
			t.Fatalf("rejected %d inputs, want %d: %+v", len(s.Rejected), len(bad), s.Rejected)
		}
		for i, b := range bad {
			if r := s.Rejected[i]; r.Signal != b.signal || !strings.Contains(r.Reason, b.reason) {
				t.Errorf("rejected[%d] = %+v, want %s with reason containing %q", i, r, b.signal, b.reason)
			}
		}
		h.env.SignalWorkflow(operator.SignalApprove, jsonPayload(`{"Marker":"`+ticketStep+`"}`))
		h.env.SignalWorkflow(operator.SignalApprove, jsonPayload(`{"Marker":"`+ticketStep+`"}`)) // decided already
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, model calls %d, tickets %d; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
	s := h.state(t)
	if last := s.Rejected[len(s.Rejected)-1]; !strings.Contains(last.Reason, "already decided") {
		t.Fatalf("second approval: %+v, want already decided", last)
	}
}

// indeterminate makes the first execution of create_ticket time out the
// way a SIGKILLed worker does, and runs the others for real.
func (h *harness) indeterminate() {
	h.mockIndeterminate()
	h.at(time.Minute, func() {
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
}

// mockIndeterminate is indeterminate without the approval.
func (h *harness) mockIndeterminate() {
	h.env.OnActivity(activities.NameCallTool, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.StepInput) (json.RawMessage, error) {
			if in.Step.Name == ticketStep && in.Generation == 1 {
				return nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
			}
			return h.acts.CallTool(ctx, in)
		})
}

func TestIndeterminateFromTimeout(t *testing.T) {
	t.Parallel()
	t.Run("done", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.indeterminate()
		h.at(time.Hour, func() {
			s := h.state(t)
			if s.Status != agent.StatusIndeterminate || s.Indeterminate != ticketStep {
				t.Errorf("after the timeout: %+v, want Indeterminate at %s", s, ticketStep)
			}
			h.env.SignalWorkflow(operator.SignalReconcile, map[string]string{"Step": ticketStep, "Outcome": "done", "Result": "TICKET-7"})
		})
		h.run()
		r := h.result(t)
		if !strings.Contains(r.Answer, "TICKET-7") {
			t.Fatalf("answer %q does not name the reconciled TICKET-7", r.Answer)
		}
		if n := h.ticketCount(t); n != 0 {
			t.Fatalf("tickets: %d, want 0 (done never runs the write)", n)
		}
		if n := h.modelCalls(); n != 3 {
			t.Fatalf("model calls: %d, want 3", n)
		}
	})
	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.indeterminate()
		h.at(time.Hour, func() {
			h.env.SignalWorkflow(operator.SignalReconcile, map[string]string{"Step": ticketStep, "Outcome": "retry"})
		})
		h.run()
		r := h.result(t)
		if !strings.Contains(r.Answer, "TICKET-1") || h.ticketCount(t) != 1 {
			t.Fatalf("answer %q with %d tickets, want TICKET-1 and 1 ticket", r.Answer, h.ticketCount(t))
		}
		if !contains(h.ids, ticketStep+"#2") {
			t.Fatalf("activity ids %v lack the second generation %s#2", h.ids, ticketStep)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
