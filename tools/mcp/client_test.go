package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
)

func connect(t *testing.T, srv Server) *Client {
	t.Helper()
	c, err := Connect(t.Context(), srv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

func listTools(t *testing.T, c *Client) map[string]*Tool {
	t.Helper()
	ts, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*Tool{}
	for _, tool := range ts {
		m[tool.Spec().Name] = tool
	}
	return m
}

func call(t *testing.T, tool *Tool, args string) agent.ToolResult {
	t.Helper()
	r, err := tool.Call(t.Context(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("call %s: %v", tool.Spec().Name, err)
	}
	return r
}

func memoryServer(t *testing.T) (Server, string) {
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	return Server{Name: "memory", Command: mcptest.Bin(t, mcptest.Memory), Env: map[string]string{"MEMORY_FILE_PATH": file}}, file
}

// kindOf summarizes how a tool is classified.
func kindOf(s agent.ToolSpec) string {
	if s.Idempotent {
		return string(s.Kind) + " idempotent"
	}
	return string(s.Kind)
}

func TestMemoryServerToolKinds(t *testing.T) {
	t.Parallel()
	srv, _ := memoryServer(t)
	ts, err := connect(t, srv).Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range ts {
		got = append(got, tool.Spec().Name+": "+kindOf(tool.Spec()))
	}
	// The annotations server-memory 2026.8.31 publishes: the reads are
	// readOnlyHint; the deletes are idempotentHint; the creates and adds
	// are neither.
	want := []string{
		"create_entities: write",
		"create_relations: write",
		"add_observations: write",
		"delete_entities: write idempotent",
		"delete_observations: write idempotent",
		"delete_relations: write idempotent",
		"read_graph: read",
		"search_nodes: read",
		"open_nodes: read",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tools:\n got %q\nwant %q", got, want)
	}
	spec := ts[6].Spec()
	if spec.Description != "Read the entire knowledge graph" {
		t.Errorf("read_graph description = %q", spec.Description)
	}
	if want := `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{},"type":"object"}`; string(spec.Schema) != want {
		t.Errorf("read_graph schema = %s, want %s", spec.Schema, want)
	}
	if spec.Approval != "" {
		t.Errorf("read_graph approval = %q, want none", spec.Approval)
	}
}

func TestMemoryCreateThenReadGraph(t *testing.T) {
	t.Parallel()
	srv, file := memoryServer(t)
	ts := listTools(t, connect(t, srv))

	created := call(t, ts["create_entities"], `{"entities":[{"name":"agentrun","entityType":"project","observations":["durable agent runs"]}]}`)
	if created.IsError {
		t.Fatalf("create_entities: %+v", created)
	}
	r := call(t, ts["read_graph"], `{}`)
	if r.IsError {
		t.Fatalf("read_graph: %+v", r)
	}
	// The server returns the graph as indented JSON text and the same value
	// as structured content; the text alone reaches the model.
	want := `{
  "entities": [
    {
      "name": "agentrun",
      "entityType": "project",
      "observations": [
        "durable agent runs"
      ]
    }
  ],
  "relations": []
}`
	if r.Content != want {
		t.Fatalf("read_graph content:\n%s\nwant:\n%s", r.Content, want)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"entity","name":"agentrun","entityType":"project","observations":["durable agent runs"]}`; string(b) != want {
		t.Fatalf("memory file = %s, want %s", b, want)
	}
}

// checkEverything lists and calls tools of the everything server.
func checkEverything(t *testing.T, c *Client) {
	t.Helper()
	ts := listTools(t, c)
	for name, want := range map[string]string{
		"echo":                           "read",
		"get-sum":                        "read",
		"trigger-long-running-operation": "read",
		"toggle-simulated-logging":       "write",
		"gzip-file-as-resource":          "write idempotent",
	} {
		if ts[name] == nil {
			t.Fatalf("no tool %q in %v", name, ts)
		}
		if got := kindOf(ts[name].Spec()); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got, want := call(t, ts["echo"], `{"message":"hello"}`), (agent.ToolResult{Content: "Echo: hello"}); got != want {
		t.Errorf("echo = %+v, want %+v", got, want)
	}
	if got, want := call(t, ts["get-sum"], `{"a":2,"b":3}`), (agent.ToolResult{Content: "The sum of 2 and 3 is 5."}); got != want {
		t.Errorf("get-sum = %+v, want %+v", got, want)
	}
	// Arguments the server's schema refuses: the server answers isError.
	bad := call(t, ts["get-sum"], `{"a":"two","b":3}`)
	if !bad.IsError || !strings.Contains(bad.Content, "Input validation error") {
		t.Errorf("get-sum with a string = %+v, want an isError result about input validation", bad)
	}
	// Structured content whose JSON a text block already holds: the text.
	if got, want := call(t, ts["get-structured-content"], `{"location":"Chicago"}`), (agent.ToolResult{Content: `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`}); got != want {
		t.Errorf("get-structured-content = %+v, want %+v", got, want)
	}
	// An image block: JSON without the data.
	if got, want := call(t, ts["get-tiny-image"], `{}`), (agent.ToolResult{Content: "Here's the image you requested:\n" +
		`{"type":"image","mimeType":"image/png","bytes":4033}` + "\nThe image above is the MCP logo."}); got != want {
		t.Errorf("get-tiny-image = %+v, want %+v", got, want)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	c := connect(t, Server{Name: "everything", Command: mcptest.Bin(t, mcptest.Everything),
		Env: map[string]string{"AGENTRUN_MCP_TEST": "from the config"}})
	checkEverything(t, c)

	// Env is added to the inherited environment.
	env := call(t, listTools(t, c)["get-env"], `{}`)
	var vars map[string]string
	if err := json.Unmarshal([]byte(env.Content), &vars); err != nil {
		t.Fatalf("get-env: %v: %s", err, env.Content)
	}
	if vars["AGENTRUN_MCP_TEST"] != "from the config" || vars["PATH"] != os.Getenv("PATH") {
		t.Errorf("server env: AGENTRUN_MCP_TEST=%q PATH=%q; want the configured value and the inherited PATH", vars["AGENTRUN_MCP_TEST"], vars["PATH"])
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	url := mcptest.EverythingHTTP(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %s is not on 127.0.0.1", url)
	}
	checkEverything(t, connect(t, Server{Name: "everything-http", URL: url, Headers: map[string]string{"X-Agentrun": "test"}}))
}

// inProcess serves a go-sdk server with pages of two tools, recording the
// tools/list requests and the headers of every HTTP request.
type inProcess struct {
	url string

	mu      sync.Mutex
	lists   int
	headers []string
}

func newInProcess(t *testing.T) *inProcess {
	p := &inProcess{}
	s := sdk.NewServer(&sdk.Implementation{Name: "in-process", Version: "v0"}, &sdk.ServerOptions{PageSize: 2})
	object := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	text := func(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }
	s.AddTool(&sdk.Tool{Name: "plain", Description: "no annotations", InputSchema: object},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("args " + string(req.Params.Arguments))}, nil
		})
	s.AddTool(&sdk.Tool{Name: "reader", Title: "A reader", InputSchema: object, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("read")}, nil
		})
	s.AddTool(&sdk.Tool{Name: "upsert", InputSchema: object, Annotations: &sdk.ToolAnnotations{IdempotentHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("first"), StructuredContent: map[string]any{"b": 1, "a": []any{true}},
				IsError: true}, nil
		})
	s.AddTool(&sdk.Tool{Name: "structured", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"b": 1, "a": []any{true}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "blocks", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.AudioContent{Data: []byte("abc"), MIMEType: "audio/wav"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}},
				&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt"},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "broken", InputSchema: object},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errors.New("handler exploded")
		})
	s.AddTool(&sdk.Tool{Name: "slow", InputSchema: object},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			// The client's notifications/cancelled is best effort: it can
			// reach the server before the call it cancels (they travel in
			// separate HTTP requests), and then the call's context never
			// ends. Closing the session waits for this handler, and closing
			// the HTTP server waits for that, so the test's end bounds it.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-t.Context().Done():
				return nil, t.Context().Err()
			}
		})
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				p.mu.Lock()
				p.lists++
				p.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	p.url = mcptest.Serve(t, s, func(r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.headers = append(p.headers, r.Header.Get("X-Agentrun")+"|"+r.Header.Get("Authorization"))
	})
	return p
}

func TestInProcessServer(t *testing.T) {
	t.Parallel()
	p := newInProcess(t)
	c := connect(t, Server{Name: "in-process", URL: p.url, Headers: map[string]string{"X-Agentrun": "yes", "Authorization": "Bearer k"}})
	ts, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range ts {
		got = append(got, tool.Spec().Name+": "+kindOf(tool.Spec()))
	}
	want := []string{"blocks: write", "broken: write", "plain: write", "reader: read", "slow: write", "structured: write", "upsert: write idempotent"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tools:\n got %q\nwant %q", got, want)
	}
	if p.lists != 4 {
		t.Errorf("tools/list requests = %d, want 4 (pages of 2)", p.lists)
	}
	byName := listTools(t, c)
	if d := byName["reader"].Spec().Description; d != "A reader" {
		t.Errorf("reader description = %q, want the title", d)
	}
	if s := string(byName["plain"].Spec().Schema); s != `{"properties":{"n":{"type":"integer"}},"type":"object"}` {
		t.Errorf("plain schema = %s", s)
	}

	for _, tc := range []struct {
		tool, args string
		want       agent.ToolResult
	}{
		{"plain", `{"n":1}`, agent.ToolResult{Content: `args {"n":1}`}},
		{"plain", ``, agent.ToolResult{Content: `args {}`}},
		{"plain", `null`, agent.ToolResult{Content: `args {}`}},
		{"plain", `[1]`, agent.ToolResult{IsError: true, Content: "plain: the arguments must be a JSON object"}},
		{"plain", `{"n":`, agent.ToolResult{IsError: true, Content: "plain: the arguments must be a JSON object"}},
		{"upsert", `{}`, agent.ToolResult{IsError: true, Content: "first\n" + `{"a":[true],"b":1}`}},
		{"structured", `{}`, agent.ToolResult{Content: `{"a":[true],"b":1}`}},
		{"blocks", `{}`, agent.ToolResult{Content: `{"type":"audio","mimeType":"audio/wav","bytes":3}` + "\n" +
			`{"type":"resource","uri":"file:///b.bin","mimeType":"application/octet-stream","blobBytes":2}` + "\n" +
			`{"type":"resource_link","uri":"file:///a.txt","name":"a.txt"}`}},
	} {
		if got := call(t, byName[tc.tool], tc.args); got != tc.want {
			t.Errorf("%s(%s) = %+v, want %+v", tc.tool, tc.args, got, tc.want)
		}
	}

	// A protocol error is a Go error, and the session survives it.
	_, err = byName["broken"].Call(t.Context(), json.RawMessage(`{}`))
	if err == nil || err.Error() != `mcp server "in-process": call broken: calling "tools/call": handler exploded` {
		t.Errorf("broken: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := byName["slow"].Call(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow with a deadline: %v, want DeadlineExceeded", err)
	}
	if got := call(t, byName["reader"], `{}`); got.Content != "read" {
		t.Errorf("reader after errors = %+v", got)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.headers {
		if h != "yes|Bearer k" {
			t.Fatalf("a request carried headers %q, want the configured ones", h)
		}
	}
}

// A name that is not a tool name (agent.ValidToolName) makes no spec: list
// leaves such a tool out (TestHostileServerBadToolNames).
func TestToolNameThatCannotNameAStep(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a/b", "a b", "a.b", strings.Repeat("n", 65), ""} {
		_, err := toolSpec(&sdk.Tool{Name: name})
		if err == nil || !strings.Contains(err.Error(), "want 1 to 64 letters, digits, '_' or '-'") {
			t.Errorf("toolSpec(%q): %v", name, err)
		}
	}
	if _, err := toolSpec(&sdk.Tool{Name: strings.Repeat("n", 64)}); err != nil {
		t.Errorf("toolSpec of a 64-byte name: %v", err)
	}
}

func TestConnectErrors(t *testing.T) {
	t.Parallel()
	sh := "/bin/sh"
	for _, tc := range []struct {
		srv  Server
		want string
	}{
		{Server{Name: "missing", Command: "/nonexistent/mcp-server"},
			`mcp server "missing": start /nonexistent/mcp-server: fork/exec /nonexistent/mcp-server: no such file or directory`},
		{Server{Name: "crash", Command: sh, Args: []string{"-c", "echo 'cannot open database' >&2; exit 2"}},
			` (server exited: exit status 2; stderr: cannot open database)`},
		{Server{Name: "both", Command: sh, URL: "http://127.0.0.1:1/mcp"},
			`mcp server "both": set exactly one of Command and URL`},
		{Server{Name: "refused", URL: "http://127.0.0.1:1/mcp"},
			`mcp server "refused": connect http://127.0.0.1:1/mcp: `},
	} {
		_, err := Connect(t.Context(), tc.srv, Options{})
		t.Logf("%s: %v", tc.srv.Name, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Connect(%s): %v, want it to contain %q", tc.srv.Name, err, tc.want)
		}
	}
}

// pid returns the process id of the client's stdio server.
func pid(c *Client) int {
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	return c.cur.cmd.Process.Pid
}

// killServer kills the stdio server with SIGKILL and waits until the client
// has seen its session end.
func killServer(t *testing.T, c *Client) {
	t.Helper()
	c.lock <- struct{}{}
	s := c.cur
	<-c.lock
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end within 10s of SIGKILL")
	}
}

func TestKilledServerIsRestartedOnTheNextCall(t *testing.T) {
	t.Parallel()
	c := connect(t, Server{Name: "everything", Command: mcptest.Bin(t, mcptest.Everything)})
	ts := listTools(t, c)
	first := pid(c)

	// Killed while idle: the next call starts a new server and succeeds.
	killServer(t, c)
	if got := call(t, ts["echo"], `{"message":"again"}`); got.Content != "Echo: again" {
		t.Fatalf("echo after restart = %+v", got)
	}
	second := pid(c)
	if second == first {
		t.Fatalf("pid %d did not change", first)
	}

	// Killed during a call: that call fails naming the exit; the next call
	// restarts the server.
	errc := startCall(t, c, ts["trigger-long-running-operation"], `{"duration":60,"steps":1}`)
	killServer(t, c)
	var err error
	select {
	case err = <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight did not end within 30s of the kill")
	}
	t.Logf("the call in flight: %v", err)
	want := `mcp server "everything": call trigger-long-running-operation: `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "(server exited: signal: killed; stderr: Starting default (STDIO) server...") {
		t.Fatalf("call during the kill: %v", err)
	}
	if got := call(t, ts["echo"], `{"message":"third"}`); got.Content != "Echo: third" {
		t.Fatalf("echo after the second restart = %+v", got)
	}
	if third := pid(c); third == second || third == first {
		t.Fatalf("pid %d did not change", third)
	}
}

func TestFailedRestartIsReportedAndRetriedByTheNextCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "server.sh")
	marker := filepath.Join(dir, "started")
	// The server starts once; later starts fail until the marker is gone.
	body := `#!/bin/sh
echo start >> "$MARKER.log"
if [ -e "$MARKER" ]; then echo "refusing to start twice" >&2; exit 3; fi
touch "$MARKER"
exec "$SERVER"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := connect(t, Server{Name: "flaky", Command: script,
		Env: map[string]string{"MARKER": marker, "SERVER": mcptest.Bin(t, mcptest.Everything)}})
	echo := listTools(t, c)["echo"]
	killServer(t, c)

	for range 2 {
		_, err := echo.Call(t.Context(), json.RawMessage(`{"message":"x"}`))
		if err == nil {
			t.Fatal("call succeeded although the server cannot start")
		}
		msg := err.Error()
		t.Logf("a call after a failed restart: %v", err)
		if !strings.HasPrefix(msg, `mcp server "flaky": the session ended (server exited: signal: killed; stderr: Starting default (STDIO) server...) and the restart failed: start `+script+": ") ||
			!strings.HasSuffix(msg, " (server exited: exit status 3; stderr: refusing to start twice)") {
			t.Fatalf("call after a failed restart: %v", err)
		}
	}
	log, _ := os.ReadFile(marker + ".log")
	if got := strings.Count(string(log), "start"); got != 3 {
		t.Fatalf("the server was started %d times, want 3 (one start and one attempt per call)", got)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if got := call(t, echo, `{"message":"back"}`); got.Content != "Echo: back" {
		t.Fatalf("echo once the server can start = %+v", got)
	}
}

func TestCallAfterClose(t *testing.T) {
	t.Parallel()
	p := newInProcess(t)
	c, err := Connect(t.Context(), Server{Name: "in-process", URL: p.url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reader := listTools(t, c)["reader"]
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := reader.Call(t.Context(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close: %v, want ErrClosed", err)
	}
}

func TestHTTPSessionLostIsReconnectedOnTheNextCall(t *testing.T) {
	t.Parallel()
	newHandler := func() http.Handler {
		s := sdk.NewServer(&sdk.Implementation{Name: "restartable", Version: "v0"}, nil)
		s.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
			})
		return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	}
	var handler atomic.Pointer[http.Handler]
	h := newHandler()
	handler.Store(&h)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)

	c := connect(t, Server{Name: "restartable", URL: ts.URL})
	ping := listTools(t, c)["ping"]
	if got := call(t, ping, `{}`); got.Content != "pong" {
		t.Fatalf("ping = %+v", got)
	}
	// The server restarts and forgets its sessions: the next call fails
	// with the server's answer, the one after it starts a new session.
	h2 := newHandler()
	handler.Store(&h2)
	_, err := ping.Call(t.Context(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), `mcp server "restartable": call ping: `) || !strings.HasSuffix(err.Error(), ": session not found") {
		t.Fatalf("call on the lost session: %v", err)
	}
	if got := call(t, ping, `{}`); got.Content != "pong" {
		t.Fatalf("ping after reconnecting = %+v", got)
	}
}
