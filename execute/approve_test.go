package execute_test

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
)

// TestCheckApproval: a tool step runs only when its approval decision is
// the worker's rule's and the rule now decides no stricter; a rule that
// panics or answers nonsense asks a person.
func TestCheckApproval(t *testing.T) {
	t.Parallel()
	write := agent.ToolSpec{Name: "refund", Kind: agent.KindWrite}
	answer := func(d string) func(agent.ToolCall) string { return func(agent.ToolCall) string { return d } }
	for _, c := range []struct {
		name     string
		rule     func(agent.ToolCall) string
		recorded string
		refused  string // in the reason; "" runs
	}{
		{"no rule, no decision", nil, "", ""},
		{"no rule, a decision", nil, agent.ApprovalNever, "no approval rule"},
		{"the rule's decision", answer(agent.ApprovalNever), agent.ApprovalNever, ""},
		{"the rule now asks", answer(agent.ApprovalAlways), agent.ApprovalNever, `rule now decides "always"`},
		{"a person approved, the rule now lets it through", answer(agent.ApprovalNever), agent.ApprovalAlways, ""},
		{"the rule now denies an approved call", answer(agent.ApprovalDeny), agent.ApprovalAlways, `rule now decides "deny"`},
		{"the rule panics", func(agent.ToolCall) string { panic("boom") }, agent.ApprovalNever, `rule now decides "always"`},
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
