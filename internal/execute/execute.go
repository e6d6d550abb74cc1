package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// Executor runs steps with a model provider and a tool set. A read that
// outlasts its tool's timeout becomes an error result the model sees; a
// write that does is an error (its effect is unknown: the engine's guard
// turns it into Indeterminate).
type Executor struct {
	Model llm.Provider
	Tools *tools.Set
}

var _ agent.Executor = (*Executor)(nil)

// Execute runs step and returns its result in recorded form.
func (e *Executor) Execute(ctx context.Context, step agent.Step) (json.RawMessage, error) {
	switch {
	case step.Kind == agent.KindModel && step.Model != nil:
		reply, err := e.Model.Complete(ctx, *step.Model)
		if err != nil {
			return nil, err
		}
		if reply.Model == "" {
			reply.Model = e.Model.Name()
		}
		return agent.EncodeModelReply(reply)
	case step.Call != nil:
		res, err := e.Tools.Call(ctx, step.Call.Name, step.Call.Args)
		if errors.Is(err, tools.ErrTimeout) && step.Kind == agent.KindRead {
			// A read that timed out changed nothing: the model hears of it.
			return agent.EncodeToolResult(agent.ToolResult{IsError: true, Content: err.Error()}), nil
		}
		if err != nil {
			return nil, err
		}
		return agent.EncodeToolResult(res), nil
	}
	return nil, fmt.Errorf("step %s: nothing to execute", step.Name)
}
