package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/tools"
)

// Server says how to reach one MCP server (tools.Server, where the tools
// file's configuration holds it).
type Server = tools.Server

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
