package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/plumbing/secret"
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

// The bounds of Close. The SDK closes a stdio server's stdin, then sends
// SIGTERM and SIGKILL after five seconds each, but it starts only once no
// request is in flight, and a request blocked writing to a server that
// stopped reading its stdin is in flight for ever. So Close kills the server
// itself when the SDK has not closed the session within closeGrace, and
// gives up, with an error, killGrace after that.
const (
	closeGrace = 12 * time.Second
	killGrace  = 5 * time.Second
	// unwindGrace bounds how long Close lets the requests it ended return
	// before it closes the session: the SDK sends their
	// notifications/cancelled in the background, and only until the
	// session starts closing.
	unwindGrace = time.Second
	// waitDelay bounds how long exec.Cmd.Wait waits for a stdio server's
	// output to end once it has exited: a child of the server can hold its
	// stdout and stderr open for ever.
	waitDelay = 2 * time.Second
)

// The bounds of what a server may send, on every transport: a server that
// lists tools for ever, or answers with more than a process should hold,
// ends in a one-line error instead of filling the memory. A tools/list, all
// its pages, is also bounded in time, by Options.ConnectTimeout.
const (
	// MaxToolPages bounds the pages of one tools/list: a server that hands
	// out a new cursor on every page would otherwise be followed for ever.
	MaxToolPages = 100
	// MaxTools bounds the tools one server may list, over all its pages.
	MaxTools = 1000
	// MaxListBytes bounds the sum of the sizes of the listed tools' names,
	// descriptions and input schemas: what a run keeps of a list.
	MaxListBytes = 16 << 20
	// MaxResultBytes bounds one message from a server (a tool result, a
	// page of tools/list): the SDK's frame cap on stdio
	// (sdk.DefaultMaxLineLength), applied on HTTP to each response body
	// (limitBody). A tool result over it is an IsError result saying so.
	MaxResultBytes = sdk.DefaultMaxLineLength
)

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
	// life ends (with ErrClosed) when Close starts: it ends the requests in
	// flight and a restart, which would otherwise keep the session open.
	life       context.Context
	end        context.CancelCauseFunc
	lock       chan struct{} // a mutex that a context can abandon
	cur        *session      // guarded by lock; nil after Close
	closeGrace time.Duration // closeGrace; tests shorten it
	inflight   inflight      // the requests (Call, Tools) in progress
}

// inflight counts requests in progress.
type inflight struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed when n drops to 0
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.none = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.none)
	}
}

// idle returns a channel that is closed once no request is in progress.
func (f *inflight) idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return f.none
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
		srv:        srv,
		opts:       opts.withDefaults(),
		sdk:        sdk.NewClient(&sdk.Implementation{Name: "agentrun", Version: "v1"}, nil),
		lock:       make(chan struct{}, 1),
		closeGrace: closeGrace,
	}
	c.life, c.end = context.WithCancelCause(context.Background())
	s, err := c.connect(ctx)
	if err != nil {
		c.end(ErrClosed)
		return nil, fmt.Errorf("mcp server %q: %w", srv.Name, err)
	}
	c.cur = s
	return c, nil
}

// bound returns ctx, ended also when Close starts (with cause ErrClosed).
func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.life, func() { cancel(context.Cause(c.life)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// closedError returns the error of a request that Close ended, or err.
func (c *Client) closedError(ctx context.Context, err error) error {
	if ctx.Err() == nil && c.life.Err() != nil {
		return fmt.Errorf("mcp server %q: %w", c.srv.Name, ErrClosed)
	}
	return err
}

// await runs f, a request of c that is given ctx, and returns its result,
// or, as soon as ctx ends, ctx's error wrapped as "mcp server NAME: WHAT:
// ...": the SDK writes a request to a stdio server without watching the
// request's context, and the write blocks while the server does not read. f
// goes on in the background until the write fails (at the latest when Close
// kills the server).
func await[T any](ctx context.Context, c *Client, what string, f func(context.Context) (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	ch := make(chan answer, 1)
	c.inflight.add()
	go func() {
		defer c.inflight.done()
		v, err := f(ctx)
		ch <- answer{v, err}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-ctx.Done():
		select {
		case a := <-ch: // it returned as ctx ended
			return a.v, a.err
		default:
			var zero T
			return zero, fmt.Errorf("mcp server %q: %s: %w", c.srv.Name, what, ctx.Err())
		}
	}
}

// Name returns the server's name.
func (c *Client) Name() string { return c.srv.Name }

func (c *Client) connect(ctx context.Context) (*session, error) {
	s := &session{done: make(chan struct{})}
	var t sdk.Transport
	if c.srv.Command != "" {
		s.cmd = exec.Command(c.srv.Command, c.srv.Args...)
		s.cmd.Env = serverEnv(os.Environ(), c.srv.Env)
		s.stderr = &tail{max: 2048}
		s.cmd.Stderr = s.stderr
		s.cmd.WaitDelay = waitDelay
		t = &sdk.CommandTransport{Command: s.cmd}
	} else {
		t = &sdk.StreamableClientTransport{
			Endpoint: c.srv.URL,
			HTTPClient: &http.Client{Transport: limitBody{
				base: headers{base: http.DefaultTransport, h: c.srv.Headers, host: endpointHost(c.srv.URL)},
				max:  MaxResultBytes,
			}},
			// Above MaxResultBytes, so that a response stream that is too
			// large trips limitBody, which says so, rather than the SDK's
			// event cap, which does not.
			MaxEventSize: MaxResultBytes + 1<<20,
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
		case s.cmd != nil && (err == nil || errors.Is(err, exec.ErrWaitDelay)):
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
// ended one. ctx is bounded by the client's life (see bound).
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
		if c.life.Err() != nil {
			return nil, fmt.Errorf("mcp server %q: %w (while restarting it: %v)", c.srv.Name, ErrClosed, err)
		}
		return nil, fmt.Errorf("mcp server %q: the session ended (%v) and the restart failed: %w", c.srv.Name, old.cause, err)
	}
	c.opts.Logger.Warn("mcp server restarted", "server", c.srv.Name, "cause", logtext.Text(old.cause.Error()))
	c.cur = s
	return s, nil
}

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

func (e *boundError) Error() string   { return e.msg }
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

// Close ends the session and, for stdio, stops the server: it closes the
// server's stdin and waits for it to exit, sending SIGTERM and then SIGKILL
// if it takes more than five seconds each. Requests in flight and a restart
// in progress end with ErrClosed. Close returns within seconds whatever the
// server does (at worst about half a minute): if the session has not ended
// by then, it returns an error and leaves the rest in the background. Close
// is idempotent.
func (c *Client) Close() error {
	c.end(ErrClosed)
	// Let the requests just ended return, so that the server hears of
	// their cancellation before the session closes: a server can wait for
	// its handlers when a session closes (the go-sdk does).
	unwind := time.NewTimer(unwindGrace)
	select {
	case <-c.inflight.idle():
	case <-unwind.C:
	}
	unwind.Stop()
	deadline := time.NewTimer(c.closeGrace + killGrace)
	defer deadline.Stop()
	select {
	case c.lock <- struct{}{}: // a restart in progress has ended
	case <-deadline.C:
		return fmt.Errorf("mcp server %q: close: a restart of the server did not end within %s", c.srv.Name, c.closeGrace+killGrace)
	}
	s := c.cur
	c.cur = nil
	<-c.lock
	if s == nil {
		return nil
	}
	err := c.closeSession(s) // for a session that ended, its end's error
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) || errors.Is(err, exec.ErrWaitDelay) {
		// The server is gone; how it exited (a server that ignores the end
		// of its stdin exits on SIGTERM) does not matter any more.
		return nil
	}
	return fmt.Errorf("mcp server %q: close: %w", c.srv.Name, err)
}

// closeSession closes s, bounded: see closeGrace.
func (c *Client) closeSession(s *session) error {
	done := make(chan error, 1)
	go func() { done <- s.cs.Close() }()
	t := time.NewTimer(c.closeGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	if s.cmd == nil {
		return fmt.Errorf("the session did not end within %s", c.closeGrace)
	}
	// Unblocks a write to the server's stdin; the SDK then stops waiting and
	// waits for the process, which waitDelay bounds.
	_ = s.cmd.Process.Kill()
	t.Reset(killGrace)
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("the session did not end within %s, nor %s after SIGKILL", c.closeGrace, killGrace)
	}
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

// frameTooLarge is the text of the SDK's error for a stdio message over its
// frame cap (sdk.DefaultMaxLineLength; the error itself is not exported).
const frameTooLarge = "exceeded the configured maximum line length"

// A tripwire is set when a response to the request whose context carries it
// (under tripwireKey) was larger than MaxResultBytes.
type tripwire struct{ atomic.Bool }

type tripwireKey struct{}

// ErrTooLarge is the error of a read of a response body past
// MaxResultBytes.
var ErrTooLarge = fmt.Errorf("the response is larger than %d MiB, the most agentrun takes from an MCP server", MaxResultBytes>>20)

// limitBody is an http.RoundTripper that ends the reading of a response
// body past max bytes with ErrTooLarge, and sets the request's tripwire.
// The SDK reads a JSON response whole (io.ReadAll) whatever its size.
type limitBody struct {
	base http.RoundTripper
	max  int64
}

func (l limitBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	w, _ := req.Context().Value(tripwireKey{}).(*tripwire)
	resp.Body = &cappedBody{rc: resp.Body, left: l.max, trip: w}
	return resp, nil
}

// cappedBody is a response body that gives at most left bytes.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	over bool
	trip *tripwire // nil: none
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		b.over = true
		if b.trip != nil {
			b.trip.Store(true)
		}
		return int(b.left), ErrTooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

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

// Inherited is what a stdio server inherits of this process's environment,
// as the MCP TypeScript SDK's default: the variables a program needs to
// run, never the worker's keys and credentials. The server's Env adds to it.
var Inherited = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// serverEnv is a stdio server's environment: the Inherited variables of
// environ that are set, then env (a key given there wins), sorted.
func serverEnv(environ []string, env map[string]string) []string {
	var out []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && slices.Contains(Inherited, k) {
			if _, mine := env[k]; !mine {
				out = append(out, kv)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// endpointHost is the host (and port) of an endpoint URL, lower case.
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host)
}

// headers is an http.RoundTripper that adds configured headers to requests
// to the configured endpoint's host only: after a redirect to another host
// (the http.Client follows it through this transport) they are not sent.
type headers struct {
	base http.RoundTripper
	h    map[string]string
	host string // the endpoint's host:port
}

func (h headers) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.h) == 0 || strings.ToLower(req.URL.Host) != h.host {
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
	s := strings.Join(strings.Fields(strings.ToValidUTF8(secret.Scrub(string(t.b)), "?")), " ")
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
