package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
)

// One tool of a server: its spec and its call.

// Tool is one tool of an MCP server. It implements tools.Tool.
type Tool struct {
	c    *Client
	spec agent.ToolSpec
}

// Spec returns the tool's spec: its name, description and input schema as
// the server lists them; KindRead when the server annotates it readOnlyHint,
// else KindWrite, Idempotent when a write is annotated idempotentHint.
func (t *Tool) Spec() agent.ToolSpec { return t.spec }

// Server returns the name of the server that offers the tool.
func (t *Tool) Server() string { return t.c.srv.Name }

// Call calls the tool. A result the server marks isError comes back as a
// ToolResult with IsError; arguments that are not a JSON object come back as
// an IsError result without calling the server. A transport or protocol
// failure is an error, as is a call on a closed client.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	arguments, problem := callArguments(args)
	if problem != "" {
		return agent.ToolResult{IsError: true, Content: t.spec.Name + ": " + problem}, nil
	}
	bctx, stop := t.c.bound(ctx)
	defer stop()
	over := new(tripwire)
	bctx = context.WithValue(bctx, tripwireKey{}, over)
	res, err := await(bctx, t.c, "call "+t.spec.Name, func(bctx context.Context) (*sdk.CallToolResult, error) {
		s, err := t.c.session(bctx)
		if err != nil {
			return nil, err
		}
		res, err := s.cs.CallTool(bctx, &sdk.CallToolParams{Name: t.spec.Name, Arguments: arguments})
		if err != nil {
			if over.Load() || strings.Contains(err.Error(), frameTooLarge) {
				over.Store(true)
				if s.cmd != nil {
					// The rest of the message is still in the pipe.
					_ = s.cmd.Process.Kill()
				}
				// The session is over (on HTTP, the SDK failed the
				// connection): wait for it to be seen ending, so that the
				// next call starts a new one.
				return nil, t.c.failure(bctx, s, "call "+t.spec.Name, err)
			}
			return nil, t.c.failure(bctx, s, "call "+t.spec.Name, err)
		}
		return res, nil
	})
	if err != nil && over.Load() && ctx.Err() == nil {
		// The server answered: for a write, it acted.
		return agent.ToolResult{IsError: true, Content: fmt.Sprintf("%s: the server's result is larger than %d MiB, the most agentrun takes from an MCP server, and was dropped: ask for less", t.spec.Name, MaxResultBytes>>20)}, nil
	}
	if err != nil {
		return agent.ToolResult{}, t.c.closedError(ctx, err)
	}
	return toolResult(res), nil
}

// callArguments checks that args is a JSON object (or empty, meaning {}).
func callArguments(args json.RawMessage) (json.RawMessage, string) {
	trimmed := strings.TrimSpace(string(args))
	if trimmed == "" || trimmed == "null" {
		return json.RawMessage(`{}`), ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, "the arguments must be a JSON object"
	}
	return args, ""
}
