package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// Tool is one executable tool.
type Tool interface {
	Spec() agent.ToolSpec
	// Call runs the tool. An error means the call failed to run (the engine
	// may retry a read); a failure the model should see is a ToolResult
	// with IsError.
	Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error)
}

// Set is a fixed collection of tools, in the order they were added.
type Set struct {
	tools []Tool
}

// NewSet returns a set of the given tools; a name given twice is an error.
func NewSet(ts ...Tool) (*Set, error) {
	s := &Set{}
	for _, t := range ts {
		if _, ok := s.Lookup(t.Spec().Name); ok {
			return nil, fmt.Errorf("tool %q is defined twice", t.Spec().Name)
		}
		s.tools = append(s.tools, t)
	}
	return s, nil
}

// Lookup returns the tool with the given name.
func (s *Set) Lookup(name string) (Tool, bool) {
	for _, t := range s.tools {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}

// Specs returns the specs of all tools, in order.
func (s *Set) Specs() []agent.ToolSpec {
	specs := make([]agent.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		specs[i] = t.Spec()
	}
	return specs
}

// Call runs the named tool.
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) (agent.ToolResult, error) {
	t, ok := s.Lookup(name)
	if !ok {
		return agent.ToolResult{}, fmt.Errorf("unknown tool %q", name)
	}
	return t.Call(ctx, args)
}
