package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
	"github.com/stretchr/testify/mock"
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

// TestStartAttrsNotUpsertedAgain: the hand example started with
// AgentRunStatus Running (as Client.Start sets it) upserts only what
// changes (versionFewerActions): AwaitingApproval, Running, Completed; 3
// upserts where a start without the attribute makes 4.
func TestStartAttrsNotUpsertedAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start temporal.SearchAttributes
		want  int
	}{
		{"set at the start", temporal.NewSearchAttributes(workflows.StatusKey.ValueSet(string(agent.StatusRunning))), 3},
		{"none at the start", temporal.NewSearchAttributes(), 4},
	} {
		h := newHarness(t)
		if err := h.env.SetTypedSearchAttributesOnStart(tc.start); err != nil {
			t.Fatal(err)
		}
		u := h.countUpserts()
		h.at(time.Minute, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep}) })
		h.run()
		if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || u.count() != tc.want {
			t.Fatalf("%s: answer %q after %d upserts, want TICKET-1 after %d", tc.name, r.Answer, u.count(), tc.want)
		}
	}
}

// TestForgedForkAttrCorrected: a run that is no fork, started with
// AgentRunForkOf naming another run (any client may set it at the start),
// unsets it in its first workflow task; a start without it upserts none.
func TestForgedForkAttrCorrected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if err := h.env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(workflows.ForkOfKey.ValueSet("victim-run"))); err != nil {
		t.Fatal(err)
	}
	var forkUpserts, unsets int
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		// Every status upsert sets AgentRunStatus; the other one is the
		// fork attribute's: an unset carries no value to look at.
		sa, _ := args.Get(0).(temporal.SearchAttributes)
		if !sa.ContainsKey(workflows.StatusKey) {
			forkUpserts++
			if !sa.ContainsKey(workflows.ForkOfKey) {
				unsets++
			}
		}
	}).Return(nil)
	h.at(time.Minute, func() { h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep}) })
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") || forkUpserts != 1 || unsets != 1 {
		t.Fatalf("answer %q after %d upserts of AgentRunForkOf (%d unsetting it), want TICKET-1 after 1 unsetting it", r.Answer, forkUpserts, unsets)
	}
}
