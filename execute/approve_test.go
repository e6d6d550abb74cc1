package execute_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// TestCheckApproval: a tool step runs only when its approval decision is
// the worker's rule's and the rule now decides no stricter; a rule that
// answers nonsense asks a person, one that fails or panics refuses it.
func TestCheckApproval(t *testing.T) {
	t.Parallel()
	write := agent.ToolSpec{Name: "refund", Kind: agent.KindWrite}
	answer := func(d string) func(agent.ToolCall) (string, error) {
		return func(agent.ToolCall) (string, error) { return d, nil }
	}
	for _, c := range []struct {
		name     string
		rule     func(agent.ToolCall) (string, error)
		recorded string
		refused  string // in the reason; "" runs
	}{
		{"no rule, no decision", nil, "", ""},
		{"no rule, a decision", nil, agent.ApprovalNever, "no approval rule"},
		{"the rule's decision", answer(agent.ApprovalNever), agent.ApprovalNever, ""},
		{"the rule now asks", answer(agent.ApprovalAlways), agent.ApprovalNever, `rule now decides "always"`},
		{"a person approved, the rule now lets it through", answer(agent.ApprovalNever), agent.ApprovalAlways, ""},
		{"the rule now denies an approved call", answer(agent.ApprovalDeny), agent.ApprovalAlways, `rule now decides "deny"`},
		{"the rule panics", func(agent.ToolCall) (string, error) { panic("boom") }, agent.ApprovalNever, "the approval rule panicked on a call of refund: boom"},
		{"the rule panics on an approved call", func(agent.ToolCall) (string, error) { panic("boom") }, agent.ApprovalAlways, "decides nothing"},
		{"the rule fails", func(agent.ToolCall) (string, error) { return "", errors.New("no limits loaded") }, agent.ApprovalNever, "decides nothing: no limits loaded"},
		{"the rule answers nonsense", answer("maybe"), agent.ApprovalNever, `rule now decides "always"`},
		{"by the tool, which asks", answer(""), agent.ApprovalAlways, ""},
	} {
		e := &execute.Executor{Approve: c.rule}
		s := agent.Step{Name: "tool/1/0/refund", Kind: agent.KindWrite, Call: &agent.ToolCall{Name: "refund", Approval: c.recorded}}
		why := e.CheckApproval(s, write)
		if (c.refused == "") != (why == "") || !strings.Contains(why, c.refused) {
			t.Errorf("%s: %q; want %q", c.name, why, c.refused)
		}
	}
}

// TestModelStepRuleFails: a rule that panics on a call the model asked for
// fails the model step with a *RuleError naming the step, the tool and the
// panic value, in one line; the failure is not transient.
func TestModelStepRuleFails(t *testing.T) {
	t.Parallel()
	model := llm.NewScripted(llm.Script{Turns: []llm.Turn{{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{}`)}}}}})
	e := &execute.Executor{Model: model, Tools: &tools.Set{}, Content: content.NewMemStore(),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Approve: func(agent.ToolCall) (string, error) { panic("limits\nnot loaded") }}
	step := agent.Step{Name: "llm/1", Kind: agent.KindModel, Model: &agent.ModelInput{New: agent.UserMessages("refund order 7")}}
	_, err := e.Execute(t.Context(), step)
	var re *execute.RuleError
	if !errors.As(err, &re) || re.Step != "llm/1" || err.Error() != "step llm/1: the approval rule panicked on a call of refund: limits not loaded" {
		t.Fatalf("got %v; want a *RuleError naming the step, the tool and the panic in one line", err)
	}
	if execute.Transient(step, err) {
		t.Error("a rule that decided nothing is transient; want the step to fail")
	}
}
