package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// testKey is the key of the encrypted runs, keyEnv its setting.
var (
	testKey = bytes.Repeat([]byte{0x5a}, codec.KeySize)
	keyEnv  = "AGENTRUN_CODEC_KEYS=k1:" + base64.StdEncoding.EncodeToString(testKey)
)

// keyedClient is a client of srv with the codec of testKey.
func keyedClient(t *testing.T, srv *testenv.Server) client.Client {
	t.Helper()
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: testKey}})
	if err != nil {
		t.Fatal(err)
	}
	opts := client.Options{}
	cluster.WithCodec(&opts, cdc)
	c, err := client.NewClientFromExisting(srv.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// plainClient is a client of srv without a codec, whether or not the
// suite's client has one (make test-encrypted).
func plainClient(t *testing.T, srv *testenv.Server) client.Client {
	t.Helper()
	c, err := client.NewClientFromExisting(srv.Client, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestHandExampleEncrypted runs the hand example with a key set on the
// worker, the starter and reconcile: it completes as without one, while
// its raw history (read by a client without the codec) holds none of the
// prompt's, the tool call's or the answer's text, and every payload in it
// is encrypted under the key. reconcile with the key shows the answer and
// the ticket step's input and result; the content store's blobs are
// sealed, and so are the write guard's records; reconcile with another
// key id fails naming the id it lacks; a client without the codec cannot
// read the run's state.
func TestHandExampleEncrypted(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(keyEnv)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-hand-encrypted"
	keyed := keyedClient(t, srv)
	stateOf := func(c client.Client) (workflows.State, error) { return stateWith(t, c, run) }

	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, prompt); code != 0 || !strings.Contains(out, "started run "+run) {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatusWith(t, keyed, run, "AwaitingApproval", time.Minute)
	if _, err := stateOf(plainClient(t, srv)); err == nil || !strings.Contains(err.Error(), codec.Encoding) {
		t.Fatalf("a client without the key read the state: %v; want an error about the %s encoding", err, codec.Encoding)
	}
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}

	raw, encrypted := rawHistory(t, srv, run)
	if encrypted < 10 {
		t.Fatalf("the history has %d encrypted payloads, want every input and result (at least 10)", encrypted)
	}
	secrets := []string{"orders database", "orders", "data owner", "TICKET-1", "90 days"}
	assertHidden(t, "the raw history", raw, secrets...)
	// The content store (conversations, values kept by reference) at rest.
	assertSealed(t, filepath.Join(f.dir, "journal", "content"), secrets...)
	// The write guard's records of the ticket step at rest.
	guard, err := filepath.Glob(filepath.Join(f.dir, "journal", "temporal", "*.jsonl"))
	if err != nil || len(guard) == 0 {
		t.Fatalf("no guard journal in %s: %v", filepath.Join(f.dir, "journal", "temporal"), err)
	}
	for _, file := range guard {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		assertHidden(t, "the guard's journal "+filepath.Base(file), string(b), secrets...)
		if lines, sealed := bytes.Count(b, []byte("\n")), bytes.Count(b, []byte(`"sealed":{"key":"k1"`)); lines == 0 || sealed != lines || !bytes.Contains(b, []byte(ticketStep)) {
			t.Fatalf("the guard's journal %s: %d of %d records sealed under k1, want all, naming %s:\n%s", filepath.Base(file), sealed, lines, ticketStep, b)
		}
	}

	// The raw history replays with the codec, and not without it.
	dir := os.Getenv("AGENTRUN_HISTORY_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	file := filepath.Join(dir, run+".json")
	if err := os.WriteFile(file, []byte(f.rawTemporal(t, "workflow", "show", "-w", run, "--output", "json")), 0o644); err != nil {
		t.Fatal(err)
	}
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: testKey}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: codec.DataConverter(cdc), FailureConverter: codec.FailureConverter(cdc)})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
		t.Fatalf("replay of the encrypted history with the codec: %v", err)
	}
	plainReplayer := worker.NewWorkflowReplayer()
	plainReplayer.RegisterWorkflowWithOptions(workflows.AgentRun, workflows.RegisterOptions)
	if err := plainReplayer.ReplayWorkflowHistoryFromJSONFile(nil, file); err == nil {
		t.Fatal("the encrypted history replayed without the codec")
	}

	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "filed as TICKET-1") {
		t.Fatalf("reconcile show with the key: exit %d, want the answer:\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", ticketStep)
	if code != 0 || !strings.Contains(out, "create_ticket(") || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("reconcile show --step with the key: exit %d, want the step's input and result:\n%s", code, out)
	}
	other := f.env("AGENTRUN_CODEC_KEYS=k2:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, codec.KeySize)))
	code, out = testenv.Run(t, other, time.Minute, reconcile, "show", run, "--step", ticketStep)
	if code == 0 || !strings.Contains(out, `key id "k1"`) || strings.Contains(out, "TICKET-1") {
		t.Fatalf("reconcile show --step under another key: exit %d, want an error naming key id k1:\n%s", code, out)
	}
	t.Logf("reconcile show --step under another key: exit %d: %s", code, out)
}

// rawHistory is run's history as the cluster keeps it (protojson, an
// event a line, payloads undecoded) and the number of encrypted payloads
// in it.
func rawHistory(t *testing.T, srv *testenv.Server, run string) (string, int) {
	t.Helper()
	var raw strings.Builder
	encrypted := 0
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, err := protojson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(b)
		raw.WriteByte('\n')
		encrypted += bytes.Count(b, []byte(base64.StdEncoding.EncodeToString([]byte(codec.Encoding))))
	}
	return raw.String(), encrypted
}

// assertHidden fails t if text holds a secret, plain or in base64.
func assertHidden(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(text, form) {
				t.Errorf("%s holds %q in plain text (as %q)", what, secret, form)
			}
		}
	}
}

// assertSealed fails t unless the content store folder dir holds blobs,
// every one sealed and holding no secret.
func assertSealed(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	blobs := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		blobs++
		if !codec.IsSealed(b) {
			t.Errorf("blob %s is not sealed: %.80q", path, b)
		}
		assertHidden(t, "blob "+path, string(b), secrets...)
		return nil
	})
	if err != nil || blobs == 0 {
		t.Fatalf("content store %s: %d blobs, %v; want the run's values, sealed", dir, blobs, err)
	}
}

// TestThreeTurnRunEncrypted: with a key set, a 3-turn run whose model
// calls the everything server's echo with 4 KB messages (kept by
// reference) completes; neither its raw history nor the content store's
// files hold the prompt or any message, and the codec server gives each
// output back whole.
func TestThreeTurnRunEncrypted(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	var script struct {
		Turns []map[string]any `json:"turns"`
	}
	var messages []string
	for i := 1; i <= 3; i++ {
		msg := fmt.Sprintf("turn %d of the confidential merger memo: ", i) + strings.Repeat(fmt.Sprintf("clause %d binds the parties; ", i), 140)
		messages = append(messages, msg)
		script.Turns = append(script.Turns, map[string]any{"tool_calls": []any{map[string]any{"name": "echo", "args": map[string]string{"message": msg}}}})
	}
	script.Turns = append(script.Turns, map[string]any{"text": "The memo has three parts."})
	env := f.env(append(echoSettings(t, f, script), keyEnv)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-three-turns-encrypted"
	const ask = "Read the acquisition memo aloud."
	code, out := testenv.Run(t, env, 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", ask)
	if code != 0 || !strings.Contains(out, "The memo has three parts.") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	raw, encrypted := rawHistory(t, srv, run)
	if encrypted < 8 {
		t.Fatalf("the history has %d encrypted payloads, want every input and result (at least 8)", encrypted)
	}
	secrets := []string{ask, "acquisition memo", "confidential merger", "binds the parties", "three parts"}
	assertHidden(t, "the raw history", raw, secrets...)
	assertSealed(t, filepath.Join(f.dir, "journal", "content"), secrets...)

	// The codec server shows each 4 KB output whole.
	shown := payloadText(t, f.temporal(t, "workflow", "show", "-w", run, "--output", "json", "--codec-endpoint", startCodecServer(t, env, "")))
	for i, msg := range messages {
		if !strings.Contains(shown, "Echo: "+msg) {
			t.Errorf("workflow show --codec-endpoint does not show turn %d's output whole (%d bytes)", i+1, len(msg))
		}
	}
	if !strings.Contains(shown, ask) {
		t.Error("workflow show --codec-endpoint does not show the prompt")
	}
}

// TestFleetHandExampleEncryptedOnPostgres: a fleet of two workers on
// PostgreSQL with a key runs the hand example; the content rows are all
// sealed and hold none of the run's text, and no host keeps local state.
func TestFleetHandExampleEncryptedOnPostgres(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newPGFleet(t, srv)
	f.start(t, 2, nil, keyEnv)
	const run = "e2e-fleet-hand-encrypted"
	runOn := func(prog string, args ...string) (int, string) {
		host := f.host(t, nil)
		return testenv.RunIn(t, host, f.hostEnv(host, keyEnv), time.Minute, testenv.Program(t, prog), args...)
	}
	if code, out := runOn("starter", "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatusWith(t, keyedClient(t, srv), run, "AwaitingApproval", time.Minute)
	if code, out := runOn("reconcile", "approve", run, ticketStep); code != 0 {
		t.Fatalf("reconcile approve: exit %d\n%s", code, out)
	}
	if code, out := runOn("starter", "--id", run, "--wait", prompt); code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	f.checkNoLocalState(t, true)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, f.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT key, data FROM agentrun_content`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var key string
		var data []byte
		if err := rows.Scan(&key, &data); err != nil {
			t.Fatal(err)
		}
		n++
		if !codec.IsSealed(data) || bytes.Contains(data, []byte("orders")) || bytes.Contains(data, []byte("TICKET-1")) {
			t.Errorf("row %s is not sealed or holds the run's text: %.80q", key, data)
		}
	}
	if err := rows.Err(); err != nil || n == 0 {
		t.Fatalf("content rows: %d, %v", n, err)
	}
}

// TestWorkerWithoutTheKeyHoldsTheRun: a worker that lacks the key a run
// is encrypted under fails its workflow tasks (Temporal retries them) and
// never the run; once a worker with the key polls, the run goes on.
func TestWorkerWithoutTheKeyHoldsTheRun(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	k2 := codec.Key{ID: "k2", Bytes: bytes.Repeat([]byte{1}, codec.KeySize)}
	wrong := testenv.Start(t, f.env("AGENTRUN_CODEC_KEYS=k2:"+base64.StdEncoding.EncodeToString(k2.Bytes)), testenv.Program(t, "worker"))
	k2codec, err := codec.New([]codec.Key{k2})
	if err != nil {
		t.Fatal(err)
	}
	// The wrong worker encrypts its failures too, under k2.
	fc := codec.FailureConverter(k2codec)
	const run = "e2e-key-missing"
	if code, out := testenv.Run(t, f.env(keyEnv), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	failed := func() bool {
		it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return false
			}
			if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil && strings.Contains(fc.FailureToError(a.GetFailure()).Error(), `key id "k1"`) {
				return true
			}
		}
		return false
	}
	testenv.WaitFor(t, time.Minute, "a workflow task failure naming key id k1", failed)
	wrong.Kill(t)
	desc, err := srv.Describe(t, run)
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the run under a worker without its key: %v, %v; want it running", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	testenv.Start(t, f.env(keyEnv), testenv.Program(t, "worker"))
	waitStatusWith(t, keyedClient(t, srv), run, "AwaitingApproval", time.Minute)
}
