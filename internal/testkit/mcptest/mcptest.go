// Package mcptest starts the MCP servers that the tools tests use: the npm
// packages pinned in tools/mcp/testdata (installed by its install.sh) and an
// in-process server built with the go-sdk.
//
// When a pinned server is not installed, a test fails if the environment
// variable CI is "true" and is skipped otherwise, in both cases naming the
// command that installs it.
package mcptest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/internal/testkit"
)

// Dir returns the absolute path of tools/mcp/testdata.
func Dir() string {
	return filepath.Join(testkit.Root(), "tools", "mcp", "testdata")
}

// The installed servers, in node_modules/.bin.
const (
	Memory     = "mcp-server-memory"
	Everything = "mcp-server-everything"
)

// Bin returns the path of an installed server, node_modules/.bin/NAME.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(), "node_modules", ".bin", name)
	_, err := os.Stat(p)
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		testkit.Unavailable(t, "MCP test server "+name, fmt.Errorf("not installed (%w): run %s", err, filepath.Join(Dir(), "install.sh")))
	}
	return p
}

// EverythingHTTP starts the everything server over streamable HTTP on a free
// port of 127.0.0.1 and returns its endpoint, e.g.
// http://127.0.0.1:41234/mcp. The server is killed when the test ends.
func EverythingHTTP(t testing.TB) string {
	t.Helper()
	bin := Bin(t, Everything)
	port := freePort(t)
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Wait returns this long after the server exits even if a child of it
	// still holds its output open.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return "http://" + addr + "/mcp"
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s streamableHttp exited: %v; output: %s", bin, err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s streamableHttp is not listening on %s after 30s; output: %s", bin, addr, out.String())
		}
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Serve runs server over streamable HTTP on an httptest server and returns
// its endpoint. Every request passes through check first, if it is not nil.
// The server is closed when the test ends.
//
// The server's tool handlers must return once the test has ended (watch
// t.Context(), not only the request's context): a client's
// notifications/cancelled is best effort and can reach the server before the
// call it cancels, and closing a session (on the client's DELETE) waits for
// the session's handlers. If the server has not closed CloseTimeout after the
// test, the test fails and the server is left to finish in the background.
func Serve(t testing.TB, server *sdk.Server, check func(*http.Request)) string {
	t.Helper()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			check(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			ts.Close() // waits for every request in progress
		}()
		select {
		case <-closed:
		case <-time.After(CloseTimeout):
			ts.CloseClientConnections()
			t.Errorf("in-process MCP server %s did not close within %s of the end of the test: a request handler is still running (a tool that ignores the end of the test?)", ts.URL, CloseTimeout)
		}
	})
	return ts.URL + "/mcp"
}

// CloseTimeout bounds the closing of a server that Serve started.
const CloseTimeout = 20 * time.Second

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
