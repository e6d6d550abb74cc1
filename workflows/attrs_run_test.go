package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
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

// TestLongToolNameRefusedAtListing: a worker tool whose 3,000-byte name
// would become a step name, an activity id and a search attribute value
// is never offered: the run fails at its listing, naming the rule, and no
// step runs. (The upsert's own bound is TestBoundAttr's.)
func TestLongToolNameRefusedAtListing(t *testing.T) {
	t.Parallel()
	script := llm.Script{Turns: []llm.Turn{{ToolCalls: []llm.ScriptedCall{{Name: longName, Args: json.RawMessage(`{}`)}}}, {Text: "Did it."}}}
	h := newScriptHarness(t, script)
	set, err := tools.NewSet(longTool{})
	if err != nil {
		t.Fatal(err)
	}
	h.acts.Exec.Tools = set
	h.run()
	var appErr *temporal.ApplicationError
	if err := h.env.GetWorkflowError(); !errors.As(err, &appErr) || !strings.Contains(appErr.Message(), "the name is not 1 to 64 letters") {
		t.Fatalf("workflow error %v; want the listing refused for the tool's name", err)
	}
	if len(h.ids) != 1 || h.ids[0] != "tools" {
		t.Fatalf("activities %v; want only the listing", h.ids)
	}
}
