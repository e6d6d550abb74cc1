package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/plumbing/secret"
)

// How a session reaches its server: the stdio process and its environment,
// the HTTP transport and its headers, and what a server wrote to stderr.

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
