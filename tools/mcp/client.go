package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
)

// Server says how to reach one MCP server: exactly one of Command (a local
// process spoken to over stdio) and URL (a streamable HTTP endpoint).
type Server struct {
	// Name names the server in errors and logs. Required.
	Name string
	// Command is the program to start; it is looked up in PATH when it has
	// no slash, and a relative path is relative to the working directory
	// of this process. Args are its arguments. Env is added to the
	// environment this process inherited (a key given here wins).
	Command string
	Args    []string
	Env     map[string]string
	// URL is the streamable HTTP endpoint, e.g. "http://127.0.0.1:3001/mcp".
	// Headers are sent with every request, except where the SDK sets the
	// header itself (Accept, Content-Type, Mcp-Session-Id and the like).
	URL     string
	Headers map[string]string
}

// Options tune a Client. The zero value is ready to use.
type Options struct {
	// Logger receives a warning when a server is restarted. Default: discard.
	Logger *slog.Logger
	// ConnectTimeout bounds the start and handshake of a server (at Connect
	// and at a restart; a restart is also bounded by the call's context).
	// Default 1 minute.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout is the default of Options.ConnectTimeout.
const DefaultConnectTimeout = time.Minute

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.ConnectTimeout = cmp.Or(o.ConnectTimeout, DefaultConnectTimeout)
	return o
}

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("mcp client is closed")

// Client is a connection to one MCP server. It is safe for concurrent use.
//
// When the session ends (a stdio server exited, an HTTP server dropped the
// session), the call that was in flight fails with the reason, and the next
// call makes one attempt to start a new session before it runs; if that
// attempt fails, the call fails naming both the restart's error and why the
// old session ended, and the call after it tries again.
type Client struct {
	srv  Server
	opts Options
	sdk  *sdk.Client
	lock chan struct{} // a mutex that a context can abandon
	cur  *session      // guarded by lock; nil after Close
}

// session is one connected session with the server.
type session struct {
	cs     *sdk.ClientSession
	cmd    *exec.Cmd // stdio only
	stderr *tail     // stdio only
	done   chan struct{}
	cause  error // why the session ended; written before done is closed
}

// ended reports whether the session is over.
func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Connect starts (stdio) or reaches (HTTP) the server and completes the MCP
// handshake. The server lives until Close, independent of ctx.
func Connect(ctx context.Context, srv Server, opts Options) (*Client, error) {
	if (srv.Command == "") == (srv.URL == "") {
		return nil, fmt.Errorf("mcp server %q: set exactly one of Command and URL", srv.Name)
	}
	c := &Client{
		srv:  srv,
		opts: opts.withDefaults(),
		sdk:  sdk.NewClient(&sdk.Implementation{Name: "agentrun", Version: "v1"}, nil),
		lock: make(chan struct{}, 1),
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", srv.Name, err)
	}
	c.cur = s
	return c, nil
}

// Name returns the server's name.
func (c *Client) Name() string { return c.srv.Name }

func (c *Client) connect(ctx context.Context) (*session, error) {
	s := &session{done: make(chan struct{})}
	var t sdk.Transport
	if c.srv.Command != "" {
		s.cmd = exec.Command(c.srv.Command, c.srv.Args...)
		s.cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(c.srv.Env)) {
			s.cmd.Env = append(s.cmd.Env, k+"="+c.srv.Env[k])
		}
		s.stderr = &tail{max: 2048}
		s.cmd.Stderr = s.stderr
		t = &sdk.CommandTransport{Command: s.cmd}
	} else {
		t = &sdk.StreamableClientTransport{
			Endpoint:   c.srv.URL,
			HTTPClient: &http.Client{Transport: headers{base: http.DefaultTransport, h: c.srv.Headers}},
			// Only request and response are used: no stream for
			// server-initiated messages, so a dead server is noticed by
			// the next call rather than by a background reconnect loop.
			DisableStandaloneSSE: true,
		}
	}
	hctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	cs, err := c.sdk.Connect(hctx, t, nil)
	if err != nil {
		if s.cmd != nil && s.cmd.Process != nil {
			// The SDK has stopped the process. When the process closed the
			// connection, it has exited and the SDK has waited for it
			// (only a process that outlives SIGKILL by five seconds would
			// still be waited for here).
			status := ""
			if errors.Is(err, sdk.ErrConnectionClosed) && s.cmd.ProcessState != nil {
				status = s.cmd.ProcessState.String()
			}
			return nil, fmt.Errorf("start %s: %w (%s)", c.srv.Command, err, s.exited(status))
		}
		if s.cmd != nil {
			return nil, fmt.Errorf("start %s: %w", c.srv.Command, err)
		}
		return nil, fmt.Errorf("connect %s: %w", c.srv.URL, err)
	}
	s.cs = cs
	go func() {
		// Wait returns once the connection is closed and, for stdio, the
		// process has been waited for: after the end of its output, Wait's
		// error is the process's exit (nil for exit status 0).
		err := cs.Wait()
		var exit *exec.ExitError
		switch {
		case s.cmd != nil && errors.As(err, &exit):
			s.cause = errors.New(s.exited(exit.String()))
		case s.cmd != nil && err == nil:
			s.cause = errors.New(s.exited("exit status 0"))
		case s.cmd != nil:
			s.cause = fmt.Errorf("session ended: %w%s", err, s.stderr.suffix())
		case err != nil:
			s.cause = fmt.Errorf("session ended: %w", err)
		default:
			s.cause = errors.New("session ended")
		}
		close(s.done)
	}()
	return s, nil
}

// exited describes how a stdio server ended: "server exited: STATUS;
// stderr: TAIL", leaving out what is unknown.
func (s *session) exited(status string) string {
	msg := "server exited"
	if status != "" {
		msg += ": " + status
	}
	return msg + s.stderr.suffix()
}

// session returns the live session, making one attempt to replace an
// ended one.
func (c *Client) session(ctx context.Context) (*session, error) {
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp server %q: %w", c.srv.Name, context.Cause(ctx))
	}
	defer func() { <-c.lock }()
	if c.cur == nil {
		return nil, fmt.Errorf("mcp server %q: %w", c.srv.Name, ErrClosed)
	}
	if !c.cur.ended() {
		return c.cur, nil
	}
	old := c.cur
	_ = old.cs.Close() // releases what the SDK holds; the connection is already closed
	s, err := c.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: the session ended (%v) and the restart failed: %w", c.srv.Name, old.cause, err)
	}
	c.opts.Logger.Warn("mcp server restarted", "server", c.srv.Name, "cause", old.cause.Error())
	c.cur = s
	return s, nil
}

// Tools lists the server's tools, following pagination, in the order the
// server gives them.
func (c *Client) Tools(ctx context.Context) ([]*Tool, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var ts []*Tool
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.failure(ctx, s, "list tools", err)
		}
		spec, err := toolSpec(t)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: %w", c.srv.Name, t.Name, err)
		}
		ts = append(ts, &Tool{c: c, spec: spec})
	}
	return ts, nil
}

// Close ends the session and, for stdio, stops the server: it closes the
// server's stdin and waits for it to exit, sending SIGTERM and then SIGKILL
// if it takes more than five seconds each. Close is idempotent.
func (c *Client) Close() error {
	c.lock <- struct{}{}
	s := c.cur
	c.cur = nil
	<-c.lock
	if s == nil {
		return nil
	}
	err := s.cs.Close() // for a session that ended, its end's error
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) {
		// The server is gone; how it exited (a server that ignores the end
		// of its stdin exits on SIGTERM) does not matter any more.
		return nil
	}
	return fmt.Errorf("mcp server %q: close: %w", c.srv.Name, err)
}

// failure describes an error of a request on session s. After a transport
// failure it waits briefly for the session to be seen ending, so that the
// next call starts a new one, and names a stdio server's exit status and the
// end of its stderr.
func (c *Client) failure(ctx context.Context, s *session, what string, err error) error {
	if ctx.Err() == nil && !isProtocolError(err) {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-s.done:
			if s.cmd != nil { // for HTTP, the cause is err itself
				return fmt.Errorf("mcp server %q: %s: %w (%v)", c.srv.Name, what, err, s.cause)
			}
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return fmt.Errorf("mcp server %q: %s: %w", c.srv.Name, what, err)
}

// isProtocolError reports whether the server answered with a JSON-RPC error.
func isProtocolError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

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
	s, err := t.c.session(ctx)
	if err != nil {
		return agent.ToolResult{}, err
	}
	res, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: t.spec.Name, Arguments: arguments})
	if err != nil {
		return agent.ToolResult{}, t.c.failure(ctx, s, "call "+t.spec.Name, err)
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

// headers is an http.RoundTripper that adds configured headers.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (h headers) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.h) == 0 {
		return h.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range h.h {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(req)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// suffix renders the tail for an error message: "; stderr: ..." on one
// line, or "" when the server wrote nothing.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(t.b), "?")), " ")
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
