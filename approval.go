package agentrun

import (
	"encoding/json"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// Decision is what an agent's approval rule ([Agent].Approve) decides for
// one tool call.
type Decision string

// The decisions.
const (
	// ByTool leaves the call to its tool's Approval (ToolOptions.Approval;
	// by default every write waits for a person).
	ByTool Decision = ""
	// Ask makes the call wait for a person's approval.
	Ask Decision = agent.ApprovalAlways
	// Allow runs the call without approval.
	Allow Decision = agent.ApprovalNever
	// Deny refuses the call: the model reads that it was denied.
	Deny Decision = agent.ApprovalDeny
)

// Call is one tool call an approval rule decides: the tool and its
// arguments as the model gave them.
type Call struct {
	// Tool is the called tool's name.
	Tool string
	args json.RawMessage
}

// Args decodes the call's arguments into v (a pointer to the tool's input
// type, say).
func (c Call) Args(v any) error {
	args := c.args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("the arguments of a call of %s: %w", c.Tool, err)
	}
	return nil
}

// rule adapts an agent's approval rule to the executor's.
func rule(approve func(Call) Decision) func(agent.ToolCall) string {
	if approve == nil {
		return nil
	}
	return func(c agent.ToolCall) string { return string(approve(Call{Tool: c.Name, args: c.Args})) }
}
