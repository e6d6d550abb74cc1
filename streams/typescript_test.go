package streams_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/streams"
)

// tsDir holds stream.js and its pinned npm packages.
const tsDir = "testdata/ts"

// tsClient returns node's path once stream.js's packages are installed
// (testenv.Node).
func tsClient(t *testing.T) string {
	t.Helper()
	return testenv.Node(t, tsDir)
}

// tsRun is one run of stream.js; its output lines are collected as they
// come.
type tsRun struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	read   chan struct{} // closed when stdout is read to its end

	mu    sync.Mutex
	lines []string
}

// noKeys keeps stream.js's codec off whatever keys the tests' environment
// sets: the streams tests' Go hosts and clients do not encrypt.
var noKeys = []string{"AGENTRUN_CODEC_KEYS=", "AGENTRUN_CODEC_KEY_FILE="}

func startTS(t *testing.T, ctx context.Context, node string, args ...string) *tsRun {
	t.Helper()
	return startTSEnv(t, ctx, node, noKeys, args...)
}

// startTSEnv is startTS with env added to the test's environment.
func startTSEnv(t *testing.T, ctx context.Context, node string, env []string, args ...string) *tsRun {
	t.Helper()
	r := &tsRun{cmd: exec.CommandContext(ctx, node, append([]string{"stream.js"}, args...)...), read: make(chan struct{})}
	r.cmd.Dir = tsDir
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = &r.stderr
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
	}()
	return r
}

// has waits until the run printed n lines.
func (r *tsRun) has(t *testing.T, n int) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%d lines from stream.js", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.lines) >= n
	})
}

// wait waits for the run to exit and returns its output lines.
func (r *tsRun) wait(t *testing.T) []string {
	t.Helper()
	<-r.read
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.cmd.Args[1:], " "), err, strings.Join(r.lines, "\n"), r.stderr.String())
	}
	return r.lines
}

// tsItem is one line of stream.js subscribe.
type tsItem struct {
	Topic    string          `json:"topic"`
	Offset   int64           `json:"offset"`
	Encoding string          `json:"encoding"`
	Value    json.RawMessage `json:"value"`
}

// canonical renders an item as "offset topic encoding value" with the value
// as compact JSON.
func canonical(t testing.TB, offset int64, topic, encoding string, value []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, value); err != nil {
		t.Fatalf("item %d: value %q: %v", offset, value, err)
	}
	return fmt.Sprintf("%d %s %s %s", offset, topic, encoding, b.String())
}

func tsItems(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		var it tsItem
		if err := json.Unmarshal([]byte(l), &it); err != nil {
			t.Fatalf("stream.js printed %q: %v", l, err)
		}
		out = append(out, canonical(t, it.Offset, it.Topic, it.Encoding, it.Value))
	}
	return out
}

// goItems reads n items with a Go subscriber, rendered like tsItems.
func goItems(t *testing.T, s *streams.Subscriber, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []string
	for range n {
		it, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		enc := string(it.Payload.GetMetadata()["encoding"])
		out = append(out, canonical(t, it.Offset, it.Topic, enc, it.Payload.GetData()))
	}
	return out
}

// TestTypeScriptClient: the TypeScript SDK's Workflow Streams client
// (@temporalio/workflow-streams, pinned in testdata/ts) against a stream
// hosted by a Go workflow on a dev server. TypeScript subscribers (all
// topics to the end; one topic from an offset) receive exactly what Go
// subscribers see, across a continue-as-new, with items published from a Go
// activity, a Go client Publisher, Go workflow code and a TypeScript
// publisher (whose items Go decodes); the TypeScript offset query agrees.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	l := newLive(t)
	addr := testenv.DevServer(t).HostPort
	id := "streams-typescript"
	l.start(t, id)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	all := startTS(t, ctx, node, "subscribe", addr, id, "0", "", "0")
	tokens := startTS(t, ctx, node, "subscribe", addr, id, "1", "tokens", "2")
	g := l.subscriber(t, id, 0)

	// From a Go activity.
	l.signal(t, id, sigActivity, publishOrder{Batches: [][]testItem{{{"events", "a"}, {"tokens", "t1"}}, {{"events", "b"}}}})
	seen := goItems(t, g, 3)
	// From a Go client.
	pub, err := streams.NewPublisher(streams.PublisherConfig{Client: l.c, WorkflowID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("events", map[string]any{"kind": "tool", "n": 2}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, goItems(t, g, 1)...)
	// From TypeScript.
	startTS(t, ctx, node, "publish", addr, id, "events", `"from-ts"`, `{"x":[1,2],"s":"é"}`).wait(t)
	seen = append(seen, goItems(t, g, 2)...)
	// Across a continue-as-new, from workflow code.
	l.continueAsNew(t, id)
	l.signal(t, id, sigPublish, testItem{"tokens", "t2"})
	seen = append(seen, goItems(t, g, 1)...)

	want(t, "Go subscriber", seen, []string{
		`0 events json/plain "a"`,
		`1 tokens json/plain "t1"`,
		`2 events json/plain "b"`,
		`3 events json/plain {"kind":"tool","n":2}`,
		`4 events json/plain "from-ts"`,
		`5 events json/plain {"x":[1,2],"s":"é"}`,
		`6 tokens json/plain "t2"`,
	})
	if off := startTS(t, ctx, node, "offset", addr, id).wait(t); !slices.Equal(off, []string{"7"}) {
		t.Errorf("TypeScript offset query: %q, want 7", off)
	}
	want(t, "TypeScript subscriber to tokens from 1", tsItems(t, tokens.wait(t)), []string{seen[1], seen[6]})

	// The log ends with its workflow: the subscriber must be caught up
	// before the workflow completes.
	all.has(t, len(seen))
	v := l.finish(t, id)
	if v.Rejects != 0 {
		t.Errorf("the host rejected %+v", v.Rejected)
	}
	want(t, "TypeScript subscriber to the end", tsItems(t, all.wait(t)), seen)
}

// TestTypeScriptEncodesItemsAlike: the TypeScript package's item encoder
// (encodePayloadWire over the default payload converter) and EncodePayload
// over Go's default data converter produce the same bytes. (Not for null:
// Go's converter makes an empty "binary/null" payload of nil, TypeScript's
// a "json/plain" null; each side decodes the other's.)
func TestTypeScriptEncodesItemsAlike(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	values := []string{`"a"`, `42`, `true`, `"é ✓"`, `[1,"x"]`, `{"k":1}`}
	got := startTS(t, t.Context(), node, append([]string{"encode"}, values...)...).wait(t)
	var want []string
	for _, v := range values {
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			t.Fatal(err)
		}
		want = append(want, wire(t, x))
	}
	want = append(want, wire(t, []byte{0, 1, 2}))
	if !slices.Equal(got, want) {
		t.Fatalf("TypeScript encodes\n%q\nGo encodes\n%q", got, want)
	}
}
