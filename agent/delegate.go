package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Delegation: a call of an agent tool (ToolSpec.Agent) runs another agent
// as a child run. Both engines name the child, give it its task and its
// share of the budget the same way, with what this file says.

// MaxRunID is the longest run id.
const MaxRunID = 128

// ChildRunID is the run id of the child run that step runs for the run
// parent: the parent's id, a dot, and the step's name with its slashes as
// dots ("planner-1.tool.2.0.filer"). The same parent and step always give
// the same id, so that running the step again finds the same child. An id
// that would pass MaxRunID keeps the start of the parent's and ends with a
// hash of the whole.
func ChildRunID(parent, step string) string {
	id := parent + "." + strings.ReplaceAll(step, "/", ".")
	if len(id) <= MaxRunID {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	tail := "." + hex.EncodeToString(sum[:8])
	return id[:MaxRunID-len(tail)] + tail
}

// IsChildRunID reports whether id is one ChildRunID gives for a step of
// the run parent: the parent's id and a dot first, or, for an id cut to
// MaxRunID, the start of that and a hash.
func IsChildRunID(parent, id string) bool {
	full := parent + "."
	if strings.HasPrefix(id, full) {
		return true
	}
	const tail = 1 + 16 // "." and 8 bytes in hex
	return len(id) == MaxRunID && strings.HasPrefix(full, id[:MaxRunID-tail])
}

// ChildTask is the first user message of a child run for the call: the
// "task" argument when the call's arguments are just that string, else the
// arguments as JSON (or, kept by reference, the reference).
func ChildTask(call ToolCall) Message {
	if call.ArgsRef != nil {
		return Message{Role: RoleUser, ContentRef: call.ArgsRef}
	}
	var only map[string]json.RawMessage
	if json.Unmarshal(call.Args, &only) == nil && len(only) == 1 {
		var task string
		if raw, ok := only["task"]; ok && json.Unmarshal(raw, &task) == nil && strings.TrimSpace(task) != "" {
			return Message{Role: RoleUser, Content: task}
		}
	}
	return Message{Role: RoleUser, Content: string(call.Args)}
}

// ChildInput is the input messages of a child run: its system prompt, if
// any, and its task.
func ChildInput(system string, task Message) []Message {
	if system == "" {
		return []Message{task}
	}
	return []Message{{Role: RoleSystem, Content: system}, task}
}

// Left is the budget a child run gets from a run that made turns model
// calls (its own and its finished children's) and used u: what is left of
// each limit (no token limit stays none). why says why there is nothing
// left for a child ("" when there is).
func (b Budget) Left(turns int, u Usage) (left Budget, why string) {
	b = b.WithDefaults()
	left.MaxTurns = b.MaxTurns - turns
	if left.MaxTurns < 1 {
		return left, fmt.Sprintf("the run made %d model calls (its agents' included); its limit is %d, and an agent needs at least one", turns, b.MaxTurns)
	}
	if b.MaxTokens > 0 {
		if left.MaxTokens = b.MaxTokens - u.Total(); left.MaxTokens < 1 {
			return left, fmt.Sprintf("the run used %d tokens (its agents' included); its limit is %d", u.Total(), b.MaxTokens)
		}
	}
	if b.MaxCost > 0 {
		if left.MaxCost = b.MaxCost - u.Cost; left.MaxCost <= 0 {
			return left, fmt.Sprintf("the run cost %s (its agents' included); its limit is %s", FormatCost(u.Cost), FormatCost(b.MaxCost))
		}
	}
	return left, ""
}

// LimitTree is Limit for a run whose children made delegated model calls
// (their tokens are in used): a model step counts them with the run's own,
// and a call of an agent tool (agents says which tools are) needs a budget
// left for its child. Either one the budget does not allow becomes a
// BudgetExceeded outcome.
func (b Budget) LimitTree(d Decision, delegated int, used Usage, agents func(tool string) bool) Decision {
	if d.Step == nil {
		return d
	}
	turns := d.Checkpoint.Turn + delegated
	var why string
	switch {
	case d.Step.Kind == KindModel:
		why = b.Exceeded(turns, used)
	case d.Step.Call != nil && agents(d.Step.Call.Name):
		_, why = b.Left(turns, used)
	}
	if why != "" {
		return Decision{Outcome: &Outcome{Status: StatusBudgetExceeded, Reason: why}, Checkpoint: d.Checkpoint}
	}
	return d
}
