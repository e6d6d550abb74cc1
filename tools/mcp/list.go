package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
)

// Listing a server's tools: tools/list followed over its pages, within its
// bounds (the connect timeout, MaxToolPages, MaxTools, MaxListBytes).

// Tools lists the server's tools, following pagination, in the order the
// server gives them. The whole listing is bounded by Options.ConnectTimeout
// (and ctx), and by MaxToolPages, MaxTools and MaxListBytes.
func (c *Client) Tools(ctx context.Context) ([]*Tool, error) {
	bctx, stop := c.bound(ctx)
	defer stop()
	lctx, cancel := context.WithTimeoutCause(bctx, c.opts.ConnectTimeout, errListTimeout)
	defer cancel()
	ts, err := await(lctx, c, "list tools", func(lctx context.Context) ([]*Tool, error) {
		s, err := c.session(lctx)
		if err != nil {
			return nil, err
		}
		return c.list(lctx, s)
	})
	if err != nil && bctx.Err() == nil && errors.Is(context.Cause(lctx), errListTimeout) {
		return nil, &boundError{fmt.Sprintf("mcp server %q: tools/list not answered within %s (the connect timeout)", c.srv.Name, c.opts.ConnectTimeout), context.DeadlineExceeded}
	}
	if err != nil {
		return nil, c.closedError(ctx, err)
	}
	return ts, nil
}

// errListTimeout is the cause of the end of a tools/list's context at the
// connect timeout.
var errListTimeout = errors.New("tools/list timed out")

// ErrListBound is matched (errors.Is) by the error of a tools/list that a
// bound ended: the connect timeout, MaxToolPages, MaxTools or MaxListBytes.
var ErrListBound = errors.New("tools/list over a bound")

// boundError is the error of a tools/list that a bound ended: msg, which
// names the server and the bound, wrapping err (if not nil) and
// ErrListBound.
type boundError struct {
	msg string
	err error
}

func (e *boundError) Error() string { return e.msg }

func (e *boundError) Unwrap() []error { return []error{ErrListBound, e.err} }

// skippedMessage is the warning logged, with the server's name and the
// tool's (shownName), when a listed tool is left out because its name is not
// a tool name (agent.ValidToolName).
const skippedMessage = "mcp server tool left out: its name is not a tool name every model provider takes"

// maxShownName bounds the bytes of a tool's name that a warning shows.
const maxShownName = 80

// shownName is a listed tool's name as a log line shows it: quoted, with
// its control characters escaped, and cut to maxShownName bytes.
func shownName(name string) string {
	if len(name) <= maxShownName {
		return strconv.Quote(name)
	}
	return strconv.Quote(name[:maxShownName]) + fmt.Sprintf("... (%d bytes)", len(name))
}

// list follows the pages of tools/list on s, within the bounds.
func (c *Client) list(ctx context.Context, s *session) ([]*Tool, error) {
	var (
		ts     []*Tool
		size   int
		cursor string
	)
	for page := 1; ; page++ {
		if page > MaxToolPages {
			return nil, &boundError{fmt.Sprintf("mcp server %q: tools/list has more than %d pages (each gave a next cursor)", c.srv.Name, MaxToolPages), nil}
		}
		res, err := s.cs.ListTools(ctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, c.failure(ctx, s, "list tools", err)
		}
		for _, t := range res.Tools {
			if len(ts) == MaxTools {
				return nil, &boundError{fmt.Sprintf("mcp server %q: tools/list has more than %d tools", c.srv.Name, MaxTools), nil}
			}
			if !agent.ValidToolName(t.Name) {
				// A name no provider takes, or too long to be a step name's
				// part, an approval's marker or a search attribute's value:
				// the tool is left out, and its name still counts.
				if size += len(t.Name) + len(t.Description); size > MaxListBytes {
					return nil, &boundError{fmt.Sprintf("mcp server %q: tools/list is larger than %d MiB (the names, descriptions and input schemas of its tools)", c.srv.Name, MaxListBytes>>20), nil}
				}
				c.opts.Logger.Warn(skippedMessage, "server", c.srv.Name, "tool", shownName(t.Name), "want", agent.ToolNameRule)
				continue
			}
			spec, err := toolSpec(t)
			if err != nil {
				return nil, fmt.Errorf("mcp server %q: tool %q: %w", c.srv.Name, t.Name, err)
			}
			if size += len(spec.Name) + len(spec.Description) + len(spec.Schema); size > MaxListBytes {
				return nil, &boundError{fmt.Sprintf("mcp server %q: tools/list is larger than %d MiB (the names, descriptions and input schemas of its tools)", c.srv.Name, MaxListBytes>>20), nil}
			}
			ts = append(ts, &Tool{c: c, spec: spec})
		}
		if res.NextCursor == "" {
			return ts, nil
		}
		cursor = res.NextCursor
	}
}
