package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
)

// The tests in this file check that nothing the client does waits without a
// bound: each would hang (until the go test timeout) without the bounds in
// client.go. A test that fails here fails within its own bound instead.

// within runs f and fails the test if it has not returned within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// startCall calls tool in the background with a context that has no
// deadline, once the request is on its way (sent reports it), and returns
// the channel that receives the call's error.
func startCall(t *testing.T, c *Client, tool *Tool, args string) <-chan error {
	t.Helper()
	sent := make(chan struct{})
	var once sync.Once
	c.sdk.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				once.Do(func() { close(sent) })
			}
			return next(ctx, method, req)
		}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := tool.Call(context.Background(), json.RawMessage(args))
		errc <- err
	}()
	select {
	case <-sent:
	case err := <-errc:
		t.Fatalf("the call ended before it was sent: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call was not sent within 30s")
	}
	return errc
}

// closeEndsTheCall closes c while the call behind errc is in flight: Close
// must return, and the call fail with ErrClosed.
func closeEndsTheCall(t *testing.T, c *Client, errc <-chan error) error {
	t.Helper()
	var closeErr error
	within(t, 30*time.Second, "Close with a call in flight", func() { closeErr = c.Close() })
	select {
	case err := <-errc:
		t.Logf("the call in flight: %v", err)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("the call in flight at Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not return within 10s of Close")
	}
	return closeErr
}

// A call without a deadline on a server that does not answer: Close must
// not wait for it (the SDK's Close waits for every call in flight).
func TestCloseEndsACallInFlightStdio(t *testing.T) {
	t.Parallel()
	c, err := Connect(t.Context(), Server{Name: "everything", Command: mcptest.Bin(t, mcptest.Everything)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := listTools(t, c)["trigger-long-running-operation"]
	errc := startCall(t, c, long, `{"duration":600,"steps":1}`)
	if err := closeEndsTheCall(t, c, errc); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestCloseEndsACallInFlightHTTP(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "blocking", Version: "v0"}, nil)
	running := make(chan struct{})
	var once sync.Once
	s.AddTool(&sdk.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			once.Do(func() { close(running) })
			// The client's notifications/cancelled is best effort; the
			// test's end bounds the handler either way.
			select {
			case <-ctx.Done():
			case <-t.Context().Done():
			}
			return nil, errors.New("cancelled")
		})
	c, err := Connect(t.Context(), Server{Name: "blocking", URL: mcptest.Serve(t, s, nil)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	errc := startCall(t, c, listTools(t, c)["block"], `{}`)
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start the call within 30s")
	}
	// The server may still be running the call when the client deletes the
	// session, and answer the DELETE late: an error is allowed here.
	if err := closeEndsTheCall(t, c, errc); err != nil {
		t.Logf("close: %v", err)
	}
}

// writeScript writes an executable shell script into a temporary directory.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A server that completes the handshake and then stops reading its stdin:
// a request larger than the pipe's buffer blocks in the write, which does
// not watch the call's context. The call must still return at its
// deadline, and Close must stop the server.
func TestCallReturnsAtItsDeadlineWhenTheServerStopsReading(t *testing.T) {
	t.Parallel()
	// It answers server/discover with an error, as a server of an older
	// protocol does, and initialize; then it stops reading.
	script := writeScript(t, `while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"deaf","version":"0"}}}\n' "$id"
    exec sleep 300;;
  *)
    if [ -n "$id" ]; then printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id"; fi;;
  esac
done
`)
	c, err := Connect(t.Context(), Server{Name: "deaf", Command: script}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.closeGrace = time.Second // the server ignores the end of its stdin
	big := &Tool{c: c, spec: agent.ToolSpec{Name: "big"}}
	args := `{"data":"` + strings.Repeat("x", 1<<20) + `"}`
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	within(t, 30*time.Second, "a call with a deadline of 1s", func() {
		_, err := big.Call(ctx, json.RawMessage(args))
		t.Logf("the call: %v", err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call: %v, want DeadlineExceeded", err)
		}
	})
	within(t, 30*time.Second, "Close", func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// Close while a restart waits for a server that never answers the
// handshake: Close must abort the restart instead of waiting for the
// connect timeout, and the call that restarts fails with ErrClosed.
func TestCloseAbortsARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	// The first start is the real server; later starts read their stdin and
	// never answer.
	script := writeScript(t, `echo start >> "$MARKER.log"
if [ -e "$MARKER" ]; then while IFS= read -r line; do :; done; exit 0; fi
touch "$MARKER"
exec "$SERVER"
`)
	c, err := Connect(t.Context(), Server{Name: "mute", Command: script,
		Env: map[string]string{"MARKER": marker, "SERVER": mcptest.Bin(t, mcptest.Everything)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo := listTools(t, c)["echo"]
	killServer(t, c)
	errc := make(chan error, 1)
	go func() {
		_, err := echo.Call(context.Background(), json.RawMessage(`{"message":"x"}`))
		errc <- err
	}()
	// Wait for the restart to start the mute server.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(marker + ".log")
		if strings.Count(string(b), "start") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restart did not start the server within 30s; log: %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Well under the connect timeout of one minute.
	within(t, 20*time.Second, "Close during a restart", func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	select {
	case err := <-errc:
		t.Logf("the call that restarted: %v", err)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("the call that restarted: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call that restarted did not return within 10s of Close")
	}
}

// A server whose child outlives it holding its stdout and stderr: Close
// must not wait for the child (exec.Cmd.Wait would wait for the end of the
// output for ever).
func TestCloseWhenAChildOfTheServerHoldsItsOutput(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	script := writeScript(t, `sleep 600 &
echo $! > "$PIDFILE"
exec "$SERVER"
`)
	c, err := Connect(t.Context(), Server{Name: "parent", Command: script,
		Env: map[string]string{"PIDFILE": pidFile, "SERVER": mcptest.Bin(t, mcptest.Everything)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Errorf("the child's pid: %v", err)
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if got := call(t, listTools(t, c)["echo"], `{"message":"hi"}`); got.Content != "Echo: hi" {
		t.Fatalf("echo = %+v", got)
	}
	within(t, 30*time.Second, "Close", func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}
