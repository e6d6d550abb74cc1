package workflows_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// emptyModel answers every call with a final answer that has no text.
type emptyModel struct{}

func (emptyModel) Name() string { return "empty" }

func (emptyModel) Complete(context.Context, agent.ModelRequest) (agent.ModelReply, error) {
	return agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, Content: "\n"},
		FinishReason: agent.FinishStop, Usage: agent.Usage{InputTokens: 10, OutputTokens: 1}}, nil
}

// TestEmptyAnswerFlagged: a final answer with no text completes the run,
// and the state and the result say the model returned nothing (the
// current details: TestDetails).
func TestEmptyAnswerFlagged(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, llm.HandExample())
	h.acts.Exec.Model = emptyModel{}
	h.run()
	r := h.result(t)
	if !r.Empty || r.CutOff || r.Steps != 1 {
		t.Fatalf("result %+v, want the empty answer flagged after 1 step", r)
	}
	s := h.state(t)
	if s.Status != agent.StatusCompleted || !s.Empty || s.CutOff {
		t.Fatalf("state %+v, want Completed and empty", s)
	}
	if n := h.modelCalls(); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
}

// TestEmptyAnswerFails: with FailOnEmpty on the worker that lists the
// tools, the same answer fails the run in one line that says the model
// returned nothing.
func TestEmptyAnswerFails(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, llm.HandExample())
	h.acts.Exec.Model = emptyModel{}
	h.acts.Exec.FailOnEmpty = true
	h.run()
	err := h.env.GetWorkflowError()
	const want = "llm/1: the model returned nothing: the final answer has no text (finish reason stop); this run fails on empty answers (AGENTRUN_FAIL_ON_EMPTY_ANSWER)"
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeFailed || !strings.Contains(appErr.Message(), want) {
		t.Fatalf("workflow error %v, want AgentRunFailed: %s", err, want)
	}
	if s := h.state(t); s.Status != agent.StatusFailed || s.Empty || !strings.Contains(s.Reason, want) {
		t.Fatalf("state %+v, want Failed: %s", s, want)
	}
	if n := h.modelCalls(); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
}
