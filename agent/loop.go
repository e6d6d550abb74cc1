package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"
)

// Status is where a run stands. The strings are part of the operator
// contract.
type Status string

// The statuses of a run.
const (
	StatusRunning          Status = "Running"
	StatusAwaitingApproval Status = "AwaitingApproval"
	StatusIndeterminate    Status = "Indeterminate"
	StatusBudgetExceeded   Status = "BudgetExceeded"
	// StatusIdle is a session that answered and waits for a message.
	StatusIdle      Status = "Idle"
	StatusCompleted Status = "Completed"
	StatusFailed    Status = "Failed"
	StatusCancelled Status = "Cancelled"
)

// Terminal reports whether a run in status s has ended: Completed, Failed
// or Cancelled. Nothing changes a run after that.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Pending is a gated tool call waiting for a person.
type Pending struct {
	Marker string          `json:"marker"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
	// ArgsRef stands for Args when they are kept by reference.
	ArgsRef *Ref `json:"args_ref,omitempty"`
	// Digest is the arguments digest (ArgsDigest) an approval or a denial
	// may name, so that it applies to these arguments only.
	Digest string `json:"digest,omitempty"`
	// Expires is the tool's approval timeout: the call is denied as
	// expired when nobody decided it that long after it became pending.
	// 0: never.
	Expires time.Duration `json:"expires,omitempty"`
}

// CancelledReason is why a cancelled run stopped; inFlight names a write
// that was running when it was cancelled ("" for none).
func CancelledReason(inFlight string) string {
	if inFlight == "" {
		return "cancelled by an operator"
	}
	return "cancelled by an operator while the write " + inFlight + " was running: it may have taken effect; check before doing it again"
}

// ArgsText is the call's arguments for people: the JSON, or the size and
// preview of arguments kept by reference.
func (p Pending) ArgsText() string {
	if p.ArgsRef != nil {
		return fmt.Sprintf("(%d bytes, kept by reference) %s", p.ArgsRef.Size, p.ArgsRef.Preview)
	}
	return string(p.Args)
}

// Outcome is where a run stops when it cannot go on by itself.
type Outcome struct {
	Status Status `json:"status"`
	Answer string `json:"answer,omitempty"` // Completed: the final message
	// CutOff is set on Completed when the model's length limit cut the
	// final answer off (finish reason length, no tool calls).
	CutOff bool `json:"cut_off,omitempty"`
	// Empty is set on Completed when the final answer has no text (the
	// model returned nothing, or only white space).
	Empty   bool      `json:"empty,omitempty"`
	Pending []Pending `json:"pending,omitempty"` // AwaitingApproval
	Step    string    `json:"step,omitempty"`    // Indeterminate: the step
	Reason  string    `json:"reason,omitempty"`  // Failed, BudgetExceeded: why
}

// Step is the next step the loop wants executed.
type Step struct {
	Name  string      `json:"name"`
	Kind  Kind        `json:"kind"`
	Model *ModelInput `json:"model,omitempty"` // model steps
	Call  *ToolCall   `json:"call,omitempty"`  // tool steps
	// Idempotent is set for a write that is safe to run again.
	Idempotent bool `json:"idempotent,omitempty"`
	// Settle is set for a write whose tool declares an idempotency key or
	// a probe; the engine fills in its Key.
	Settle *Settle `json:"settle,omitempty"`
}

// Decision is the loop's answer: either a step to execute or an outcome,
// and the checkpoint the loop reached on the way.
type Decision struct {
	Step    *Step
	Outcome *Outcome
	// Checkpoint is the start of the turn the decision is about. Facts about
	// the steps before it are no longer needed (see Facts.Forget).
	Checkpoint Checkpoint
}

// Checkpoint is where a run stands at the start of a turn: the model calls
// made so far, the conversation through the latest reply, and the tool
// calls that reply asked for. Everything before it is settled. Its size
// does not grow with the number of turns, so an engine can carry it instead
// of every fact (the Temporal workflow does, across continue-as-new).
type Checkpoint struct {
	Turn         int          `json:"turn"` // model calls completed
	Conversation Conversation `json:"conversation"`
	Calls        []ToolCall   `json:"calls,omitempty"` // the tool calls of reply Turn
	// Input is the run's input, until the first model step has put it in
	// the conversation.
	Input []Message `json:"input,omitempty"`
}

// Start is the checkpoint of a new run with the given input.
func Start(input []Message) Checkpoint { return Checkpoint{Input: input} }

// CutOffNote tells people that a final answer was cut off.
const CutOffNote = "the final answer was cut off by the model's length limit (finish reason length); raise max_tokens in the models file (AGENTRUN_MODELS) or AGENTRUN_MAX_TOKENS"

// EmptyNote tells people that a final answer has no text.
const EmptyNote = "the model returned nothing: the final answer has no text"

// DeniedByOperator begins the tool result the model receives for a call a
// person denied; the reason follows.
const DeniedByOperator = "denied by operator: "

// Approval is a person's decision about a gated call.
type Approval struct {
	Approved bool   `json:"approved"`
	Reason   string `json:"reason,omitempty"` // why it was denied
	// Expired: the denial is an approval timeout's, not a person's
	// (operator.ExpiredDeny).
	Expired bool `json:"expired,omitempty"`
}

// Facts is everything recorded about a run besides its input. Engines fill
// it; the loop only reads it.
type Facts struct {
	// Results holds the recorded result of each completed step.
	Results map[string]json.RawMessage `json:"results,omitempty"`
	// Decisions holds approvals and denials by marker.
	Decisions map[string]Approval `json:"decisions,omitempty"`
	// Indeterminate holds the write steps that started and never recorded
	// a result, and are not yet reconciled.
	Indeterminate map[string]bool `json:"indeterminate,omitempty"`
	// Messages holds the user messages a person sent during the run, by
	// the model step they are given to (after that step's tool results).
	Messages map[string][]Message `json:"messages,omitempty"`
	// Gates holds, by marker, the policy's decision about a tool call made
	// when the model asked for it (the local journal records it then):
	// the loop keeps to it whatever the tools say now. A call without one
	// is decided from the current tools.
	Gates map[string]Gate `json:"gates,omitempty"`
}

// AddMessage queues a user message for the model step named step.
func (f *Facts) AddMessage(step, content string) {
	f.Messages[step] = append(f.Messages[step], Message{Role: RoleUser, Content: content})
}

// NextModelStep is the model step a message sent now goes to: the one
// after the newest model step started (or, when none is, after turn).
func NextModelStep(turn int, started int) string {
	return ModelStep(max(turn, started) + 1)
}

// NewFacts returns empty facts.
func NewFacts() *Facts {
	return &Facts{
		Results:       map[string]json.RawMessage{},
		Decisions:     map[string]Approval{},
		Indeterminate: map[string]bool{},
		Messages:      map[string][]Message{},
	}
}

// Complete returns f with every map made, or new facts for nil: facts
// decoded from JSON may lack the maps that were empty.
func (f *Facts) Complete() *Facts {
	if f == nil {
		return NewFacts()
	}
	if f.Results == nil {
		f.Results = map[string]json.RawMessage{}
	}
	if f.Decisions == nil {
		f.Decisions = map[string]Approval{}
	}
	if f.Indeterminate == nil {
		f.Indeterminate = map[string]bool{}
	}
	if f.Messages == nil {
		f.Messages = map[string][]Message{}
	}
	return f
}

// Forget drops the facts about steps before the checkpoint's turn: the
// model steps up to cp.Turn and the tool steps of earlier turns. The loop
// started from cp never reads them.
func (f *Facts) Forget(cp Checkpoint) {
	old := func(name string) bool {
		n, tool := StepTurn(name)
		return n > 0 && (n < cp.Turn || (!tool && n == cp.Turn))
	}
	forget(f.Results, old)
	forget(f.Decisions, old)
	forget(f.Indeterminate, old)
	forget(f.Messages, old)
	forget(f.Gates, old)
}

// forget deletes the entries of m whose step name is old.
func forget[V any](m map[string]V, old func(name string) bool) {
	maps.DeleteFunc(m, func(name string, _ V) bool { return old(name) })
}

// Gates returns the policy's decisions about the tool calls of a model
// reply (step llm/N, calls as the reply asked them), by marker, over the
// given tools: a call of a tool not among them has none.
func (l Loop) Gates(n int, calls []ToolCall) map[string]Gate {
	policy := l.Policy
	if policy == nil {
		policy = GateWrites{}
	}
	var out map[string]Gate
	for i, call := range calls {
		spec, ok := l.spec(call.Name)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]Gate{}
		}
		out[ToolStep(n, i, call.Name)] = policy.Decide(spec, call)
	}
	return out
}

// Loop is the agent loop over a fixed set of tools and a policy. It sets
// no limit on model calls: engines apply the run's Budget to its decisions.
type Loop struct {
	Tools  []ToolSpec // the tools offered to the model, in this order
	Policy Policy     // nil means GateWrites
	// ToolsKey is the content-store key of the tool specs, passed to model
	// steps; "" lets the executor use its own tools.
	ToolsKey string
	// FailOnCut makes a final answer cut off by the model's length limit
	// fail the run instead of completing it with CutOff set.
	FailOnCut bool
	// FailOnEmpty makes a final answer with no text fail the run instead
	// of completing it with Empty set.
	FailOnEmpty bool
}

// Next replays the run from the checkpoint over the recorded facts and
// returns the next step to execute, or the outcome where the run stops.
func (l Loop) Next(cp Checkpoint, f *Facts) Decision {
	return l.next(cp, f, "")
}

// Find returns the step named name as the loop would execute it, with its
// input, walking the recorded facts from cp; false when the run never got
// there. Unlike Next it also finds steps that have a result.
func (l Loop) Find(cp Checkpoint, f *Facts, name string) (Step, bool) {
	d := l.next(cp, f, name)
	if d.Step == nil || d.Step.Name != name {
		return Step{}, false
	}
	return *d.Step, true
}

// next is Next; a non-empty stop names a step to return when it is reached
// even if it has a result.
func (l Loop) next(cp Checkpoint, f *Facts, stop string) Decision {
	policy := l.Policy
	if policy == nil {
		policy = GateWrites{}
	}
	for {
		n := cp.Turn
		newMsgs := cp.Input
		if n > 0 {
			newMsgs = nil
			var pending []Pending
			for i, call := range cp.Calls {
				step := ToolStep(n, i, call.Name)
				res, d := l.toolResult(policy, step, call, f, stop)
				if d != nil {
					d.Checkpoint = cp
					if d.Outcome != nil && d.Outcome.Status == StatusAwaitingApproval {
						pending = append(pending, d.Outcome.Pending...)
						continue
					}
					return *d
				}
				newMsgs = append(newMsgs, Message{Role: RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.Content, ContentRef: res.ContentRef, IsError: res.IsError, Step: step})
			}
			if len(pending) > 0 {
				return Decision{Outcome: &Outcome{Status: StatusAwaitingApproval, Pending: pending}, Checkpoint: cp}
			}
		}
		name := ModelStep(n + 1)
		if msgs := f.Messages[name]; len(msgs) > 0 {
			newMsgs = append(append([]Message(nil), newMsgs...), msgs...)
		}
		raw, ok := f.Results[name]
		if !ok || name == stop {
			in := &ModelInput{Conversation: cp.Conversation, New: newMsgs, Tools: l.ToolsKey}
			return Decision{Step: &Step{Name: name, Kind: KindModel, Model: in}, Checkpoint: cp}
		}
		reply, err := DecodeModelReply(raw)
		if err != nil {
			return Decision{Outcome: failedOutcome(fmt.Sprintf("recorded result of %s is not a model reply: %v", name, err)), Checkpoint: cp}
		}
		calls := reply.Message.ToolCalls
		if reply.FinishReason == FinishLength && len(calls) > 0 {
			return Decision{Outcome: failedOutcome(fmt.Sprintf("%s was cut off by the model's length limit while asking for %s; none was executed", name, plural(len(calls), "tool call"))), Checkpoint: cp}
		}
		if len(calls) > MaxCallsPerReply {
			return Decision{Outcome: failedOutcome(fmt.Sprintf("%s asked for %d tool calls in one reply; at most %d are run (MaxCallsPerReply), none of them were", name, len(calls), MaxCallsPerReply)), Checkpoint: cp}
		}
		reply.Message.Role = RoleAssistant
		conv := cp.Conversation
		if reply.Conversation != nil {
			conv = *reply.Conversation
		} else {
			// The conversation stayed inline (or the reply was recorded
			// before conversations were kept by reference): the input's,
			// with its new messages and the reply appended.
			conv.Tail = append(append(append([]Message(nil), conv.Tail...), newMsgs...), reply.Message.Recorded())
		}
		cp = Checkpoint{Turn: n + 1, Conversation: conv, Calls: calls}
		if len(calls) == 0 && len(f.Messages[ModelStep(n+2)]) == 0 {
			if reply.CutOff() && l.FailOnCut {
				return Decision{Outcome: failedOutcome(fmt.Sprintf("%s: %s; this run fails on cut answers (AGENTRUN_FAIL_ON_CUT_ANSWER)", name, CutOffNote)), Checkpoint: cp}
			}
			if reply.Empty() && l.FailOnEmpty {
				return Decision{Outcome: failedOutcome(fmt.Sprintf("%s: %s (finish reason %s); this run fails on empty answers (AGENTRUN_FAIL_ON_EMPTY_ANSWER)", name, EmptyNote, cmp.Or(reply.FinishReason, "none"))), Checkpoint: cp}
			}
			return Decision{Outcome: &Outcome{Status: StatusCompleted, Answer: reply.Message.Content, CutOff: reply.CutOff(), Empty: reply.Empty()}, Checkpoint: cp}
		}
	}
}

// plural is n and word, with an s when n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// MaxCallsPerReply bounds the tool calls of one model reply. A reply that
// asks for more fails the run before any of them runs: each call is a step
// with its own activity and marker, and a run parks on every gated one at
// once, so a model (or a prompt injection) asking for thousands would flood
// the run's history and its pending markers.
const MaxCallsPerReply = 128

// toolResult returns the result of one tool call when it is known, or the
// decision that stands in its way.
func (l Loop) toolResult(policy Policy, step string, call ToolCall, f *Facts, stop string) (ToolResult, *Decision) {
	if raw, ok := f.Results[step]; ok && step != stop {
		r, err := DecodeToolResult(raw)
		if err != nil {
			return ToolResult{}, &Decision{Outcome: failedOutcome(fmt.Sprintf("recorded result of %s is not a tool result: %v", step, err))}
		}
		return r, nil
	}
	spec, ok := l.spec(call.Name)
	if !ok {
		return ToolResult{IsError: true, Content: fmt.Sprintf("unknown tool %q; available tools: %s", call.Name, l.toolNames())}, nil
	}
	gate, recorded := f.Gates[step]
	if !recorded {
		gate = policy.Decide(spec, call)
	}
	switch gate.Verdict {
	case Deny:
		return ToolResult{IsError: true, Content: "denied: " + gate.Reason}, nil
	case RequireApproval:
		a, decided := f.Decisions[step]
		if !decided {
			return ToolResult{}, &Decision{Outcome: &Outcome{Status: StatusAwaitingApproval,
				Pending: []Pending{{Marker: step, Tool: call.Name, Args: call.Args, ArgsRef: call.ArgsRef, Digest: call.Digest(), Expires: spec.ApprovalTimeout}}}}
		}
		if !a.Approved {
			return ToolResult{IsError: true, Content: DeniedByOperator + a.Reason}, nil
		}
	}
	if f.Indeterminate[step] {
		return ToolResult{}, &Decision{Outcome: &Outcome{Status: StatusIndeterminate, Step: step}}
	}
	c := call
	s := &Step{Name: step, Kind: gate.Kind, Call: &c, Idempotent: spec.Idempotent && gate.Kind == KindWrite}
	if gate.Kind == KindWrite && (spec.IdempotencyKey != "" || spec.Probe != nil) {
		s.Settle = &Settle{KeyArg: spec.IdempotencyKey, Probe: spec.Probe}
	}
	return ToolResult{}, &Decision{Step: s}
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

func failedOutcome(reason string) *Outcome {
	return &Outcome{Status: StatusFailed, Reason: reason}
}
