package agent

import (
	"encoding/json"
	"time"
)

// ToolSpec describes a tool to the model and to the policy gate.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"` // JSON schema of the arguments
	Kind        Kind            `json:"kind"`             // KindRead or KindWrite
	// Idempotent marks a write that is safe to run again: an interrupted
	// attempt is retried instead of becoming Indeterminate.
	Idempotent bool `json:"idempotent,omitempty"`
	// Approval overrides the policy for this tool: "" (the policy decides),
	// ApprovalAlways, ApprovalNever or ApprovalDeny.
	Approval string `json:"approval,omitempty"`
	// ApprovalTimeout is how long a call of this tool may wait for a
	// person's approval before it is denied as expired ("approval expired
	// after D"), from the completion of the model step that asked for it
	// (operator.Expiry). Default 0: it waits as long as it takes.
	ApprovalTimeout time.Duration `json:"approval_timeout,omitempty"`
	// IdempotencyKey names the argument of a write that takes an
	// idempotency key: the engine fills it (IdempotencyKey) and the model
	// never sees it, and an interrupted call runs again with the same key.
	// Default "": none.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Probe is a write's check of the world, asked when a call was
	// interrupted. Default nil: none.
	Probe *Probe `json:"probe,omitempty"`
	// Agent marks an agent tool: a call runs another agent as a child run
	// (its Kind is KindRead: the child guards its own writes, and running
	// the step again attaches to the same child).
	Agent bool `json:"agent,omitempty"`
	// Activity marks an activity tool: a call is scheduled as this
	// activity (another worker's, on its own task queue), not run by the
	// engine's tool step. Default nil: the engine runs the tool.
	Activity *ActivitySpec `json:"activity,omitempty"`
}

// MaxToolName is the longest tool name: the longest every model provider
// takes (OpenAI's function names are ^[A-Za-z0-9_-]{1,64}$).
const MaxToolName = 64

// ToolNameRule says what a tool name may be, for error messages.
const ToolNameRule = "1 to 64 letters, digits, '_' or '-'"

// ValidToolName reports whether name is a tool name every provider takes
// (ToolNameRule): the rule for agent tools' names and for MCP servers' tool
// names, so that a name can be a step name's last part, an approval's
// marker and a search attribute's value as it is.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Per-tool approval overrides.
const (
	ApprovalAlways = "always" // every call waits for a person
	ApprovalNever  = "never"  // calls run without approval
	ApprovalDeny   = "deny"   // calls never run
)

// Verdict is the policy's decision about one tool call.
type Verdict int

// The verdicts.
const (
	Allow Verdict = iota
	RequireApproval
	Deny
)

// Gate is the policy's answer for one call: how to treat it and what kind
// of step it is.
type Gate struct {
	Verdict Verdict `json:"verdict"`
	Kind    Kind    `json:"kind"`
	Reason  string  `json:"reason,omitempty"` // why a call is denied; shown to the model
}

// Policy decides, per tool call, whether it runs, waits for approval or is
// denied, and classifies it as read or write. It must be deterministic.
type Policy interface {
	Decide(spec ToolSpec, call ToolCall) Gate
}

// GateWrites is the demo policy: every write waits for approval, reads run.
// A tool's Approval field overrides it.
type GateWrites struct{}

// Decide implements Policy.
func (GateWrites) Decide(spec ToolSpec, call ToolCall) Gate {
	if call.Approval != "" {
		spec.Approval = call.Approval // the worker's rule decided this call
	}
	g := Gate{Kind: spec.Kind, Verdict: Allow}
	if g.Kind != KindRead {
		g.Kind = KindWrite // anything not known to be a read has side effects
	}
	switch spec.Approval {
	case ApprovalAlways:
		g.Verdict = RequireApproval
	case ApprovalNever:
	case ApprovalDeny:
		g.Verdict, g.Reason = Deny, "the policy denies "+spec.Name
	default:
		if g.Kind == KindWrite {
			g.Verdict = RequireApproval
		}
	}
	return g
}
