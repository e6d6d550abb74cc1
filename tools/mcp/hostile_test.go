package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run hostile MCP servers as real processes (this
// test binary, started again in a server mode) and real HTTP servers on
// loopback, and the client in a child process too (this binary in the
// client mode), so that its peak memory (the child's maximum resident set)
// is measured apart from the other tests. Each hostile server must end in a
// one-line error (or, for a result, an error result) within the connect
// timeout, the client's memory bounded.

// Environment variables of the helper modes of this test binary.
const (
	envHostileServer = "AGENTRUN_MCP_TEST_HOSTILE_SERVER" // a stdio server: its mode
	envHostileClient = "AGENTRUN_MCP_TEST_HOSTILE_CLIENT" // the client: a JSON clientJob
)

// hostileBytes is the size of the hostile servers' huge results.
const hostileBytes = 200 << 20

// maxChildRSS bounds the client's peak resident memory: a server's
// messages are bounded at 16 MiB; reading 200 MiB whole took 1.6 GB.
const maxChildRSS = memScale * 300 << 20

// hostileTimeout is the connect timeout of the clients under test, and
// what a hostile list must end within.
const hostileTimeout = 5 * time.Second

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHostileServer); mode != "" {
		serveHostile(mode, os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if job := os.Getenv(envHostileClient); job != "" {
		os.Exit(runClientJob(job))
	}
	os.Exit(m.Run())
}

// clientJob is what the client child does: connect, list, and call Call
// (if set) with {}, Calls times (at least once).
type clientJob struct {
	Server         Server
	ConnectTimeout time.Duration
	Call           string
	Calls          int
}

// clientOutcome is what the client child prints, one JSON line.
type clientOutcome struct {
	Err     string // the error of Connect, Tools or Call
	Bound   bool   // the error is ErrListBound
	Timeout bool   // the error is context.DeadlineExceeded
	Tools   int
	Names   []string // the listed tools' names
	Log     string   // what the client logged (JSON lines)
	Results []callOutcome
}

// callOutcome is the outcome of one call of clientJob.Call.
type callOutcome struct {
	IsError bool
	Content string // the result's content, cut to 1000 bytes
	Bytes   int    // the result content's length
}

func runClientJob(job string) int {
	var j clientJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var out clientOutcome
	func() {
		ctx := context.Background()
		var log strings.Builder
		defer func() { out.Log = log.String() }()
		c, err := Connect(ctx, j.Server, Options{ConnectTimeout: j.ConnectTimeout, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
		if err != nil {
			out.Err = err.Error()
			return
		}
		defer c.Close()
		ts, err := c.Tools(ctx)
		if err != nil {
			out.Err, out.Bound, out.Timeout = err.Error(), errors.Is(err, ErrListBound), errors.Is(err, context.DeadlineExceeded)
			return
		}
		out.Tools = len(ts)
		for _, t := range ts {
			out.Names = append(out.Names, t.Spec().Name)
		}
		for _, t := range ts {
			if t.Spec().Name != j.Call {
				continue
			}
			for range max(j.Calls, 1) {
				res, err := t.Call(ctx, json.RawMessage(`{}`))
				if err != nil {
					out.Err = err.Error()
					return
				}
				out.Results = append(out.Results, callOutcome{res.IsError, res.Content[:min(len(res.Content), 1000)], len(res.Content)})
			}
		}
	}()
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}

// runClient runs job in a child process and returns its outcome, how long
// it took and its peak resident memory in bytes.
func runClient(t *testing.T, job clientJob) (clientOutcome, time.Duration, int64) {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHostileClient+"="+string(b))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the client: %v; stderr: %s", err, stderr.String())
	}
	var out clientOutcome
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("the client's outcome %q: %v; stderr: %s", stdout, err, stderr.String())
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("the client took %s, peak RSS %d MiB: %+v", took.Round(time.Millisecond), rss>>20, out)
	return out, took, rss
}

// stdioServer is a Server that runs this test binary as a hostile stdio
// server in mode.
func stdioServer(name, mode string) Server {
	return Server{Name: name, Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: map[string]string{envHostileServer: mode}}
}

// rpc is a JSON-RPC message, as the hostile servers read it.
type rpc struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params struct {
		Cursor string `json:"cursor"`
	} `json:"params"`
}

const initializeResult = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"0"}}`

// serveHostile is a stdio MCP server that answers initialize and then
// misbehaves as mode says:
//
//   - "silent-list": it never answers tools/list.
//   - "pages:N:SIZE": tools/list pages for ever, N tools a page, each with a
//     description of SIZE bytes, and a new cursor on every page.
//   - "huge-result": it lists one read tool, "dump", whose result is
//     hostileBytes of text.
//   - "bad-names": it lists badNames, each a read tool, and "lookup".
func serveHostile(mode string, in io.Reader, out io.Writer) {
	w := bufio.NewWriter(out)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		w.Flush()
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m rpc
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // a notification
		}
		switch {
		case m.Method == "initialize":
			reply(m.ID, initializeResult)
		case m.Method == "tools/list" && mode == "silent-list":
			// never answered
		case m.Method == "tools/list" && strings.HasPrefix(mode, "pages:"):
			reply(m.ID, endlessPage(mode, m.Params.Cursor))
		case m.Method == "tools/list" && mode == "huge-result":
			reply(m.ID, dumpList)
		case m.Method == "tools/list" && mode == "bad-names":
			reply(m.ID, badNamesList())
		case m.Method == "tools/call" && mode == "huge-result":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, m.ID)
			if writeHuge(w) != nil {
				return // the client has gone
			}
			fmt.Fprint(w, `"}]}}`+"\n")
			w.Flush()
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", m.ID)
			w.Flush()
		}
	}
}

const dumpList = `{"tools":[{"name":"dump","description":"a huge result","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`

// endlessPage is the page after cursor of mode "pages:N:SIZE".
func endlessPage(mode, cursor string) string {
	f := strings.Split(mode, ":")
	n, _ := strconv.Atoi(f[1])
	size, _ := strconv.Atoi(f[2])
	page, _ := strconv.Atoi(cursor)
	desc := strings.Repeat("d", size)
	var tools []string
	for i := range n {
		tools = append(tools, fmt.Sprintf(`{"name":"t%d_%d","description":"%s","inputSchema":{"type":"object"}}`, page, i, desc))
	}
	return fmt.Sprintf(`{"tools":[%s],"nextCursor":"%d"}`, strings.Join(tools, ","), page+1)
}

// writeHuge writes hostileBytes of 'x' to w, a MiB at a time.
func writeHuge(w io.Writer) error {
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range hostileBytes >> 20 {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
	}
	return nil
}

// A server that answers initialize and never tools/list: the list fails
// within the connect timeout, naming the server and the bound.
func TestHostileServerNeverAnswersToolsList(t *testing.T) {
	t.Parallel()
	out, took, rss := runClient(t, clientJob{Server: stdioServer("files", "silent-list"), ConnectTimeout: hostileTimeout})
	if !strings.Contains(out.Err, `mcp server "files": tools/list not answered within 5s (the connect timeout)`) || !out.Bound || !out.Timeout || strings.Contains(out.Err, "\n") {
		t.Errorf("the error: %q, want one line naming the server and the connect timeout", out.Err)
	}
	if took > hostileTimeout+10*time.Second {
		t.Errorf("the client took %s, want about the connect timeout of %s", took, hostileTimeout)
	}
	if rss > maxChildRSS {
		t.Errorf("the client's peak RSS is %d MiB, want at most %d", rss>>20, maxChildRSS>>20)
	}
}

// Servers that page tools/list for ever, with a new cursor each page: the
// list ends at the first bound it crosses (pages, tools, bytes), naming it,
// well before the connect timeout.
func TestHostileServerPagesForEver(t *testing.T) {
	t.Parallel()
	const timeout = 30 * time.Second
	for _, tc := range []struct {
		mode, want string
	}{
		{"pages:1:10", `mcp server "pager": tools/list has more than 100 pages`},
		{"pages:300:10", `mcp server "pager": tools/list has more than 1000 tools`},
		{"pages:3:4194304", `mcp server "pager": tools/list is larger than 16 MiB`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out, took, rss := runClient(t, clientJob{Server: stdioServer("pager", tc.mode), ConnectTimeout: timeout})
			if !strings.Contains(out.Err, tc.want) || !out.Bound || out.Timeout || strings.Contains(out.Err, "\n") {
				t.Errorf("the error: %q, want one line with %q", out.Err, tc.want)
			}
			if took > timeout {
				t.Errorf("the client took %s, more than the connect timeout of %s", took, timeout)
			}
			if rss > maxChildRSS {
				t.Errorf("the client's peak RSS is %d MiB, want at most %d", rss>>20, maxChildRSS>>20)
			}
		})
	}
}

// A read whose result is 200 MiB, over stdio and over streamable HTTP: an
// error result that says so and names the cap, never the 200 MiB; the next
// call starts a new session (and gets the same).
func TestHostileServerHugeResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		srv  func(t *testing.T) Server
	}{
		{"stdio", func(*testing.T) Server { return stdioServer("dumper", "huge-result") }},
		{"http-json", func(t *testing.T) Server { return Server{Name: "dumper", URL: hugeHTTP(t, false)} }},
		{"http-sse", func(t *testing.T) Server { return Server{Name: "dumper", URL: hugeHTTP(t, true)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, took, rss := runClient(t, clientJob{Server: tc.srv(t), ConnectTimeout: hostileTimeout, Call: "dump", Calls: 2})
			want := "dump: the server's result is larger than 16 MiB"
			if out.Err != "" || len(out.Results) != 2 {
				t.Fatalf("the calls: %+v, want two results", out)
			}
			for i, r := range out.Results {
				if !r.IsError || !strings.Contains(r.Content, want) || r.Bytes > 1000 {
					t.Errorf("call %d: %+v, want an error result with %q", i+1, r, want)
				}
			}
			if took > hostileTimeout+20*time.Second {
				t.Errorf("the client took %s", took)
			}
			if rss > maxChildRSS {
				t.Errorf("the client's peak RSS is %d MiB, want at most %d", rss>>20, maxChildRSS>>20)
			}
		})
	}
}

// hugeHTTP serves a streamable HTTP MCP server on loopback whose tool
// "dump" answers with hostileBytes of text, as one JSON response or, with
// sse, one server-sent event.
func hugeHTTP(t *testing.T, sse bool) string {
	var mu sync.Mutex
	calls := 0 // tools/call requests
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream; DELETE too
			return
		}
		var m rpc
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Mcp-Session-Id", "hostile-session")
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch m.Method {
		case "initialize":
			result = initializeResult
		case "tools/list":
			result = dumpList
		case "tools/call":
			mu.Lock()
			calls++
			mu.Unlock()
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
			return
		}
		prefix, suffix := "", "\n"
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			prefix, suffix = "event: message\ndata: ", "\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if result != "" {
			fmt.Fprintf(w, `%s{"jsonrpc":"2.0","id":%s,"result":%s}%s`, prefix, m.ID, result, suffix)
			return
		}
		fmt.Fprintf(w, `%s{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, prefix, m.ID)
		if writeHuge(w) != nil {
			return
		}
		fmt.Fprintf(w, `"}]}}%s`, suffix)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		mu.Lock()
		defer mu.Unlock()
		if calls != 2 {
			t.Errorf("the HTTP server got %d tools/call, want 2", calls)
		}
	})
	return ts.URL + "/mcp"
}

// The body cap: a body of exactly the cap reads whole; one byte more is
// ErrTooLarge after the cap, and sets the tripwire.
func TestCappedBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{10, false}, {11, true}, {100, true}} {
		w := new(tripwire)
		b := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))), left: 10, trip: w}
		got, err := io.ReadAll(b)
		if tc.wantErr != errors.Is(err, ErrTooLarge) || tc.wantErr != w.Load() || len(got) != min(tc.size, 10) {
			t.Errorf("a body of %d bytes under a cap of 10: read %d bytes, %v, tripped %v", tc.size, len(got), err, w.Load())
		}
	}
}
