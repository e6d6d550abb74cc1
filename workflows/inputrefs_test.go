package workflows_test

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/workflows"
)

// TestStartInputRefsRefused: a start input whose message names a value in
// the content store (another run's tool output, say) by reference fails
// the run at once: the model never reads it, and no activity runs.
func TestStartInputRefsRefused(t *testing.T) {
	t.Parallel()
	ref := &agent.Ref{Key: "sha256:" + strings.Repeat("ab", 32), Size: 5000, Preview: "another run's output"}
	for name, msgs := range map[string][]agent.Message{
		"content_ref": {{Role: agent.RoleUser, Content: "summarise this"}, {Role: agent.RoleUser, ContentRef: ref}},
		"args_ref":    {{Role: agent.RoleUser, Content: "go on"}, {Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "lookup", ArgsRef: ref}}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: msgs})
			const want = "the input's message 2 holds a content reference (content_ref or args_ref); a start input carries its text inline"
			var appErr *temporal.ApplicationError
			if err := h.env.GetWorkflowError(); !errors.As(err, &appErr) || appErr.Message() != want {
				t.Fatalf("workflow error %v, want %q", err, want)
			}
			if len(h.ids) != 0 {
				t.Fatalf("activities %v ran; want none", h.ids)
			}
		})
	}
}
