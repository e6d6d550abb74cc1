package agentrun

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

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

// rule adapts agent name's approval rule to the executor's. A panic is
// an error naming the agent, the tool and the panic value, in one line
// (the stack goes to logger); a Decision that is none of the four is Ask,
// and logger says so.
func rule(name string, approve func(Call) Decision, logger *slog.Logger) func(agent.ToolCall) (string, error) {
	if approve == nil {
		return nil
	}
	return func(c agent.ToolCall) (d string, err error) {
		defer func() {
			if p := recover(); p != nil {
				logger.Error("the approval rule panicked", "agent", name, "tool", c.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				d, err = "", fmt.Errorf("agent %q: the approval rule panicked on a call of %s: %s", name, c.Name, strings.Join(strings.Fields(fmt.Sprint(p)), " "))
			}
		}()
		switch d := approve(Call{Tool: c.Name, args: c.Args}); d {
		case ByTool, Ask, Allow, Deny:
			return string(d), nil
		default:
			logger.Warn("the approval rule decided none of ByTool, Ask, Allow or Deny; the call waits for a person", "agent", name, "tool", c.Name, "decision", string(d))
			return string(Ask), nil
		}
	}
}
