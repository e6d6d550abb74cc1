package tools

import (
	"context"
	"io"
	"log/slog"
)

// Server says how to reach one MCP server: exactly one of Command (a local
// process spoken to over stdio) and URL (a streamable HTTP endpoint).
type Server struct {
	// Name names the server in errors and logs. Required.
	Name string
	// Command is the program to start; it is looked up in PATH when it has
	// no slash, and a relative path is relative to the working directory
	// of this process. Args are its arguments. The server's environment is
	// Env plus the Inherited variables of this process that are set (a key
	// given in Env wins): never this process's keys, unless Env names them.
	Command string
	Args    []string
	Env     map[string]string
	// URL is the streamable HTTP endpoint, e.g. "http://127.0.0.1:3001/mcp".
	// Headers are sent with every request to URL's host, except where the
	// SDK sets the header itself (Accept, Content-Type, Mcp-Session-Id and
	// the like); never to another host a redirect leads to.
	URL     string
	Headers map[string]string
}

// Connect connects to one MCP server of a Config and lists its tools; the
// Closer stops the server. Package tools/mcp gives it (mcp.Source): this
// package links no MCP client.
type Connect func(ctx context.Context, s Server, logger *slog.Logger) ([]Tool, io.Closer, error)
