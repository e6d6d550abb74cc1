package workflows_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// cutModel answers every call with a final text the length limit cut off.
type cutModel struct{}

func (cutModel) Name() string { return "cut" }

func (cutModel) Complete(context.Context, agent.ModelRequest) (agent.ModelReply, error) {
	return agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: "The access policy says that you"},
		FinishReason: agent.FinishLength, Usage: agent.Usage{InputTokens: 10, OutputTokens: 8}}, nil
}

// TestCutAnswerFlagged: a final answer cut off by the length limit
// completes the run, and the state and the result say it was cut off.
func TestCutAnswerFlagged(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, llm.HandExample())
	h.acts.Exec.Model = cutModel{}
	h.run()
	r := h.result(t)
	if !r.CutOff || r.Answer != "The access policy says that you" || r.Steps != 1 {
		t.Fatalf("result %+v, want the cut answer flagged after 1 step", r)
	}
	if s := h.state(t); s.Status != agent.StatusCompleted || !s.CutOff {
		t.Fatalf("state %+v, want Completed and cut off", s)
	}
	if n := h.modelCalls(); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
}

// TestCutAnswerFails: with FailOnCut on the worker that lists the tools,
// the same answer fails the run with a reason that says why.
func TestCutAnswerFails(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, llm.HandExample())
	h.acts.Exec.Model = cutModel{}
	h.acts.Exec.FailOnCut = true
	h.run()
	err := h.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeFailed || !strings.Contains(appErr.Message(), "llm/1: the final answer was cut off by the model's length limit") {
		t.Fatalf("workflow error %v, want AgentRunFailed saying llm/1 was cut off", err)
	}
	if s := h.state(t); s.Status != agent.StatusFailed || s.CutOff || !strings.Contains(s.Reason, "AGENTRUN_FAIL_ON_CUT_ANSWER") {
		t.Fatalf("state %+v, want Failed naming AGENTRUN_FAIL_ON_CUT_ANSWER", s)
	}
	if n := h.modelCalls(); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
}

// TestModelStepOutlivesItsRequest: a model step's start-to-close timeout
// is the step timeout, or the model's request timeout plus a minute when
// that is longer.
func TestModelStepOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ request, want time.Duration }{
		{0, workflows.StepTimeout}, // the default, 2m, is well inside it
		{15 * time.Minute, 16 * time.Minute},
	} {
		h := newHarness(t)
		h.acts.Exec.ModelTimeout = tc.request
		h.at(time.Minute, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep}) })
		h.run()
		h.result(t)
		if got := h.timeout["llm/1"]; got != tc.want {
			t.Errorf("request timeout %v: llm/1's start-to-close timeout %v, want %v", tc.request, got, tc.want)
		}
	}
}
