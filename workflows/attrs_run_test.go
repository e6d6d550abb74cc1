package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// longTool is an ungated write with a 3,000-byte name.
type longTool struct{}

var longName = strings.Repeat("w", 3000)

func (longTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: longName, Kind: agent.KindWrite, Approval: agent.ApprovalNever, Schema: json.RawMessage(`{"type":"object"}`)}
}

func (longTool) Call(context.Context, json.RawMessage) (agent.ToolResult, error) {
	return agent.ToolResult{Content: "done"}, nil
}

// TestIndeterminateStepAttrIsCut: a write with a 3,000-byte name that
// becomes Indeterminate upserts AgentRunStep cut to at most
// workflows.MaxAttrValue bytes as JSON, its start kept and "…+N bytes"
// after it (N the bytes cut); the state keeps the whole step, and a
// reconcile naming it completes the run.
func TestIndeterminateStepAttrIsCut(t *testing.T) {
	t.Parallel()
	step := "tool/1/0/" + longName
	script := llm.Script{Turns: []llm.Turn{{ToolCalls: []llm.ScriptedCall{{Name: longName, Args: json.RawMessage(`{}`)}}}, {Text: "Did " + llm.LastToolResult + "."}}}
	h := newScriptHarness(t, script)
	set, err := tools.NewSet(longTool{})
	if err != nil {
		t.Fatal(err)
	}
	h.acts.Exec.Tools = set
	h.env.OnActivity(h.acts.CallTool, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.StepInput) (json.RawMessage, error) {
			if in.Generation == 1 {
				return nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)
			}
			return h.acts.CallTool(ctx, in)
		})
	u := h.countUpserts()
	var parked workflows.State
	h.at(time.Hour, func() {
		parked = h.state(t)
		h.env.SignalWorkflow(operator.SignalReconcile, map[string]string{"Step": step, "Outcome": "done", "Result": "RECONCILED"})
	})
	h.run()
	r := h.result(t)
	if parked.Status != agent.StatusIndeterminate || parked.Indeterminate != step || !strings.Contains(r.Answer, "RECONCILED") {
		t.Fatalf("parked %s at %.40q, answer %q; want Indeterminate at the whole step, then RECONCILED", parked.Status, parked.Indeterminate, r.Answer)
	}
	var shown string
	for _, s := range u.steps {
		if strings.HasPrefix(s, "tool/1/0/www") {
			shown = s
		}
	}
	b, _ := json.Marshal(shown)
	want := "…+1025 bytes" // of 3,009: 1,984 fit beside the quotes and the 14-byte mark
	if len(b) > workflows.MaxAttrValue || !strings.HasPrefix(step, strings.TrimSuffix(shown, want)) || !strings.HasSuffix(shown, want) {
		t.Fatalf("AgentRunStep %.60q…%q (%d bytes as JSON); want the step's start and %q, at most %d bytes", shown, shown[max(0, len(shown)-20):], len(b), want, workflows.MaxAttrValue)
	}
}
