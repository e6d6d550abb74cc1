package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Override changes how one tool is classified, gated and bounded. The zero
// value changes nothing.
type Override struct {
	// Kind replaces the tool's kind: agent.KindRead or agent.KindWrite.
	// Default "": the tool's own (for MCP tools, from the annotations).
	Kind agent.Kind
	// Approval replaces the policy's decision: agent.ApprovalAlways,
	// agent.ApprovalNever or agent.ApprovalDeny. Default "": the policy
	// decides.
	Approval string
	// Idempotent, when set, says whether a write is safe to run again.
	// Default nil: the tool's own (for MCP tools, idempotentHint).
	Idempotent *bool
	// Timeout bounds one call. Default 0: DefaultTimeout.
	Timeout time.Duration
	// ApprovalTimeout is how long a call may wait for approval before it
	// is denied as expired. Default 0: Config.ApprovalTimeout.
	ApprovalTimeout time.Duration
	// IdempotencyKey, when set, names the argument of a write that takes
	// an idempotency key; "" says it takes none. Default nil: the tool's
	// own (for MCP tools, the schema convention of package tools/mcp).
	IdempotencyKey *string
	// Probe is the write's probe. Default nil: none.
	Probe *agent.Probe
}

// Apply returns t with o applied. A Set made from the result (NewSet, Open)
// runs its calls under o.Timeout.
func Apply(t Tool, o Override) Tool {
	spec := t.Spec()
	if o.Kind != "" {
		spec.Kind = o.Kind
	}
	if o.Approval != "" {
		spec.Approval = o.Approval
	}
	if o.Idempotent != nil {
		spec.Idempotent = *o.Idempotent
	}
	if o.ApprovalTimeout != 0 {
		spec.ApprovalTimeout = o.ApprovalTimeout
	}
	if o.IdempotencyKey != nil {
		spec.IdempotencyKey = *o.IdempotencyKey
	}
	if o.Probe != nil {
		spec.Probe = o.Probe
	}
	timeout := o.Timeout
	if prev, ok := t.(*overridden); ok {
		t = prev.Tool
		if timeout == 0 {
			timeout = prev.timeout
		}
	}
	o2 := &overridden{Tool: t, spec: spec, timeout: timeout}
	if _, ok := t.(Scheduled); ok {
		return overriddenScheduled{o2} // still scheduled as its activity
	}
	return o2
}

// overriddenScheduled is a Scheduled tool with an Override applied.
type overriddenScheduled struct{ *overridden }

func (o overriddenScheduled) Input(args json.RawMessage) (json.RawMessage, string) {
	return o.Tool.(Scheduled).Input(args)
}

// Timeout is the timeout o gives its calls; 0: DefaultTimeout.
func (o *overridden) Timeout() time.Duration { return o.timeout }

// overridden is a tool with an Override applied.
type overridden struct {
	Tool
	spec    agent.ToolSpec
	timeout time.Duration // 0: DefaultTimeout
}

func (o *overridden) Spec() agent.ToolSpec { return o.spec }

func (o *overridden) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	return o.Tool.Call(ctx, args)
}
