package agentruntest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
)

// ScriptedModel is a model that plays a script of turns: turn N answers
// the run's N-th model call. It counts the calls it answered. It is safe
// for concurrent use.
type ScriptedModel struct {
	script *llm.Scripted
	calls  atomic.Int64
}

var _ agentrun.Model = (*ScriptedModel)(nil)

// Model returns a model playing turns in order: build them with [Call]
// and [Answer], or as llm.Turn values (with TextOnError, several calls in
// one turn). A model call past the last turn fails the run's model step
// as a bad request.
func Model(turns ...llm.Turn) *ScriptedModel {
	return &ScriptedModel{script: llm.NewScripted(llm.Script{Turns: turns})}
}

// Name implements agentrun.Model: "scripted".
func (m *ScriptedModel) Name() string { return m.script.Name() }

// Complete implements agentrun.Model: the turn whose number is the
// number of the model's replies in req plus one.
func (m *ScriptedModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.calls.Add(1)
	return m.script.Complete(ctx, req)
}

// Calls counts the model calls the model answered (or failed), in every
// run that used it.
func (m *ScriptedModel) Calls() int { return int(m.calls.Load()) }

// Call is a turn in which the model asks for the tool with args: a value
// encoded as JSON (a struct with the tool's input type, a map), or a
// json.RawMessage as it is. It panics when args cannot be encoded: a
// script is the test's own code, as a regular expression is.
func Call(tool string, args any) llm.Turn {
	raw, ok := args.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			panic(fmt.Sprintf("agentruntest.Call(%q): encode the arguments: %v", tool, err))
		}
		raw = b
	}
	return llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: tool, Args: raw}}}
}

// Answer is a turn in which the model answers text, which ends the run.
// The text may hold llm.LastToolResult, replaced by the newest tool
// result the model read (a receipt, or why a call was denied).
func Answer(text string) llm.Turn { return llm.Turn{Text: text} }
