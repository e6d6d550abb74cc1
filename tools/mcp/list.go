package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
