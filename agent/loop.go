package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Status is where a run stands. The strings are part of the operator
// contract.
type Status string

// The statuses of a run.
const (
	StatusRunning          Status = "Running"
	StatusAwaitingApproval Status = "AwaitingApproval"
	StatusIndeterminate    Status = "Indeterminate"
	StatusCompleted        Status = "Completed"
	StatusFailed           Status = "Failed"
)

// Pending is a gated tool call waiting for a person.
type Pending struct {
	Marker string          `json:"marker"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// Outcome is where a run stops when it cannot go on by itself.
type Outcome struct {
	Status  Status    `json:"status"`
	Answer  string    `json:"answer,omitempty"`  // Completed: the final message
	Pending []Pending `json:"pending,omitempty"` // AwaitingApproval
	Step    string    `json:"step,omitempty"`    // Indeterminate: the step
	Reason  string    `json:"reason,omitempty"`  // Failed: why
}

// Step is the next step the loop wants executed.
type Step struct {
	Name  string        `json:"name"`
	Kind  Kind          `json:"kind"`
	Model *ModelRequest `json:"model,omitempty"` // model steps
	Call  *ToolCall     `json:"call,omitempty"`  // tool steps
	// Idempotent is set for a write that is safe to run again.
	Idempotent bool `json:"idempotent,omitempty"`
}

// Decision is the loop's answer: either a step to execute or an outcome.
type Decision struct {
	Step    *Step
	Outcome *Outcome
}

// Approval is a person's decision about a gated call.
type Approval struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"` // why it was denied
}

// Facts is everything recorded about a run besides its input. Engines fill
// it; the loop only reads it.
type Facts struct {
	// Results holds the recorded result of each completed step.
	Results map[string]json.RawMessage
	// Decisions holds approvals and denials by marker.
	Decisions map[string]Approval
	// Indeterminate holds the write steps that started and never recorded
	// a result, and are not yet reconciled.
	Indeterminate map[string]bool
}

// NewFacts returns empty facts.
func NewFacts() *Facts {
	return &Facts{
		Results:       map[string]json.RawMessage{},
		Decisions:     map[string]Approval{},
		Indeterminate: map[string]bool{},
	}
}

// DefaultMaxTurns bounds the model calls of one run.
const DefaultMaxTurns = 25

// Loop is the agent loop over a fixed set of tools and a policy.
type Loop struct {
	Tools    []ToolSpec // the tools offered to the model, in this order
	Policy   Policy     // nil means GateWrites
	MaxTurns int        // 0 means DefaultMaxTurns
}

// Next replays the run from its input over the recorded facts and returns
// the next step to execute, or the outcome where the run stops.
func (l Loop) Next(input []Message, f *Facts) Decision {
	policy := l.Policy
	if policy == nil {
		policy = GateWrites{}
	}
	maxTurns := l.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	msgs := append([]Message(nil), input...)
	for n := 1; ; n++ {
		if n > maxTurns {
			return failed(fmt.Sprintf("the model made %d calls without a final answer (limit %d)", n-1, maxTurns))
		}
		name := ModelStep(n)
		raw, ok := f.Results[name]
		if !ok {
			req := &ModelRequest{Messages: msgs, Tools: l.Tools}
			return Decision{Step: &Step{Name: name, Kind: KindModel, Model: req}}
		}
		reply, err := DecodeModelReply(raw)
		if err != nil {
			return failed(fmt.Sprintf("recorded result of %s is not a model reply: %v", name, err))
		}
		calls := reply.Message.ToolCalls
		if reply.FinishReason == FinishLength && len(calls) > 0 {
			return failed(fmt.Sprintf("%s was cut off by the model's length limit while asking for %d tool call(s); they were not executed", name, len(calls)))
		}
		reply.Message.Role = RoleAssistant
		msgs = append(msgs, reply.Message)
		if len(calls) == 0 {
			return Decision{Outcome: &Outcome{Status: StatusCompleted, Answer: reply.Message.Content}}
		}
		var pending []Pending
		for i, call := range calls {
			step := ToolStep(n, i, call.Name)
			res, d := l.toolResult(policy, step, call, f)
			if d != nil {
				if d.Outcome != nil && d.Outcome.Status == StatusAwaitingApproval {
					pending = append(pending, d.Outcome.Pending...)
					continue
				}
				return *d
			}
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError})
		}
		if len(pending) > 0 {
			return Decision{Outcome: &Outcome{Status: StatusAwaitingApproval, Pending: pending}}
		}
	}
}

// toolResult returns the result of one tool call when it is known, or the
// decision that stands in its way.
func (l Loop) toolResult(policy Policy, step string, call ToolCall, f *Facts) (ToolResult, *Decision) {
	if raw, ok := f.Results[step]; ok {
		r, err := DecodeToolResult(raw)
		if err != nil {
			d := failed(fmt.Sprintf("recorded result of %s is not a tool result: %v", step, err))
			return ToolResult{}, &d
		}
		return r, nil
	}
	spec, ok := l.spec(call.Name)
	if !ok {
		return ToolResult{IsError: true, Content: fmt.Sprintf("unknown tool %q; available tools: %s", call.Name, l.toolNames())}, nil
	}
	gate := policy.Decide(spec, call)
	switch gate.Verdict {
	case Deny:
		return ToolResult{IsError: true, Content: "denied: " + gate.Reason}, nil
	case RequireApproval:
		a, decided := f.Decisions[step]
		if !decided {
			return ToolResult{}, &Decision{Outcome: &Outcome{Status: StatusAwaitingApproval,
				Pending: []Pending{{Marker: step, Tool: call.Name, Args: call.Args}}}}
		}
		if !a.Approved {
			return ToolResult{IsError: true, Content: "denied by operator: " + a.Reason}, nil
		}
	}
	if f.Indeterminate[step] {
		return ToolResult{}, &Decision{Outcome: &Outcome{Status: StatusIndeterminate, Step: step}}
	}
	c := call
	return ToolResult{}, &Decision{Step: &Step{Name: step, Kind: gate.Kind, Call: &c, Idempotent: spec.Idempotent && gate.Kind == KindWrite}}
}

func (l Loop) spec(name string) (ToolSpec, bool) {
	for _, s := range l.Tools {
		if s.Name == name {
			return s, true
		}
	}
	return ToolSpec{}, false
}

func (l Loop) toolNames() string {
	names := make([]string, len(l.Tools))
	for i, s := range l.Tools {
		names[i] = s.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func failed(reason string) Decision {
	return Decision{Outcome: &Outcome{Status: StatusFailed, Reason: reason}}
}
