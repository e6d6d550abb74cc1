package mcp

import (
	"context"
	"io"
	"log/slog"

	"github.com/agentrun/agentrun/tools"
)

var (
	_ tools.Tool    = (*Tool)(nil)
	_ tools.Connect = Source
)

// Source connects to s and lists its tools: tools.Config's Connect, with
// logger as Options.Logger. The Closer is the Client; a server whose tools
// cannot be listed is closed.
func Source(ctx context.Context, s Server, logger *slog.Logger) ([]tools.Tool, io.Closer, error) {
	c, err := Connect(ctx, s, Options{Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	list, err := c.Tools(ctx)
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	ts := make([]tools.Tool, len(list))
	for i, t := range list {
		ts[i] = t
	}
	return ts, c, nil
}
