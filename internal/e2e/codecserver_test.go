package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
)

// startCodecServer starts the codecserver program with env on addr (a
// free loopback port when "") and returns its endpoint once it answers.
func startCodecServer(t *testing.T, env []string, addr string) string {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:" + freePort(t)
	}
	p := testenv.Start(t, append(env, "AGENTRUN_CODEC_ADDR="+addr), testenv.Program(t, "codecserver"))
	endpoint := "http://" + addr
	testenv.WaitFor(t, 30*time.Second, "the codec server to answer", func() bool {
		resp, err := http.Post(endpoint+"/decode", "application/json", strings.NewReader(`{"payloads":[]}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("codec server:\n%s", p.Tail())
		}
	})
	return endpoint
}

// freePort is a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := devserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// lookupRun is a scripted run whose tool call's arguments and output are
// over 1 KiB, so that the run keeps both by reference: the model asks the
// lookup tool about a long topic, which answers that it knows no policy on
// it, naming the topic, and the model says so.
type lookupRun struct {
	// Model is the AGENTRUN_MODEL setting of the worker that runs it.
	Model string
	// Prompt is the run's prompt, Topic the tool call's argument and
	// Output the tool's output (3,005 bytes).
	Prompt, Topic, Output string
}

// newLookupRun writes the run's model script into dir.
func newLookupRun(t *testing.T, dir string) lookupRun {
	t.Helper()
	topic := strings.Repeat("quarterly revenue figures of the northern region ", 60) // 2,940 bytes
	script, err := json.Marshal(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "lookup", Args: json.RawMessage(`{"topic":"` + topic + `"}`)}}},
		{Text: "There is no policy on that topic."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatal(err)
	}
	return lookupRun{
		Model:  "AGENTRUN_MODEL=scripted:" + path,
		Prompt: "What is the policy on revenue figures?",
		Topic:  topic,
		Output: "No policy found for " + topic + "; known topics: database access, vpn, laptop.",
	}
}

// payloadText is the data of every payload of a history that `temporal
// workflow show --output json` printed (base64 there), one a line.
func payloadText(t *testing.T, out string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("workflow show --output json: %v\n%.500s", err, out)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if md, ok := v["metadata"].(map[string]any); ok {
				if data, ok := v["data"].(string); ok && md["encoding"] != nil {
					d, err := base64.StdEncoding.DecodeString(data)
					if err != nil {
						t.Fatalf("payload data %.80q: %v", data, err)
					}
					enc, _ := base64.StdEncoding.DecodeString(md["encoding"].(string))
					b.WriteString(string(enc) + " " + string(d) + "\n")
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// TestCodecServerShowsEncryptedRuns: with a key set, the codecserver
// program (a real process, with the workers' keys and journal) lets the
// temporal CLI read an encrypted hand example (`workflow show
// --codec-endpoint` prints the prompt, which the raw history does not
// hold), and shows a tool output of over 1 KiB, which the run keeps by
// reference, whole: the history holds its key and preview, the codec
// server the content store's text.
func TestCodecServerShowsEncryptedRuns(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	env := f.env(keyEnv)
	w := testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	endpoint := startCodecServer(t, env, "")

	// The hand example, encrypted.
	const hand = "e2e-codecserver-hand"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", hand, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatusWith(t, keyedClient(t, srv), hand, "AwaitingApproval", time.Minute)
	if code, out := testenv.Run(t, env, time.Minute, reconcile, "approve", hand, ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", hand, "--wait", prompt); code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if raw := payloadText(t, f.rawTemporal(t, "workflow", "show", "-w", hand, "--output", "json")); strings.Contains(raw, "orders database") {
		t.Fatal("the history shown without the codec server holds the prompt in plain text")
	}
	shown := payloadText(t, f.temporal(t, "workflow", "show", "-w", hand, "--output", "json", "--codec-endpoint", endpoint))
	for _, want := range []string{"orders database", "TICKET-1"} {
		if !strings.Contains(shown, want) {
			t.Errorf("workflow show --codec-endpoint does not show %q:\n%.2000s", want, shown)
		}
	}
	// A query without input, as make demo polls the run's state: the CLI
	// posts an /encode of no payloads ({}), which the tokenless server
	// answers for anyone, as it seals nothing.
	if st := f.temporal(t, "workflow", "query", "-w", hand, "--name", "state", "--output", "json", "--codec-endpoint", endpoint); !strings.Contains(st, `"Completed"`) {
		t.Errorf("workflow query --name state --codec-endpoint: want the state, Completed:\n%.1000s", st)
	}

	// A run whose tool output (and arguments) are over 1 KiB, kept by
	// reference: the lookup tool answers an unknown topic with the topic.
	w.Stop(10 * time.Second)
	lookup := newLookupRun(t, f.dir)
	topic, output := lookup.Topic, lookup.Output
	env = f.env(keyEnv, lookup.Model)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const long = "e2e-codecserver-long"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", long, "--wait", lookup.Prompt); code != 0 || !strings.Contains(out, "no policy on that topic") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	plain := payloadText(t, f.rawTemporal(t, "workflow", "show", "-w", long, "--output", "json"))
	if strings.Contains(plain, "northern region") {
		t.Fatal("the history shown without the codec server holds the tool output in plain text")
	}
	shown = payloadText(t, f.temporal(t, "workflow", "show", "-w", long, "--output", "json", "--codec-endpoint", endpoint))
	if !strings.Contains(shown, `"content_ref"`) || !strings.Contains(shown, "quarterly revenue") {
		t.Fatalf("workflow show --codec-endpoint: no reference or no text:\n%.3000s", shown)
	}
	if !strings.Contains(shown, `"content_ref":{"content":"`+output+`"`) {
		t.Errorf("workflow show --codec-endpoint does not show the tool output whole (%d bytes):\n%.3000s", len(output), shown)
	}
	if !strings.Contains(shown, `"args_ref":{"content":"{\"topic\":\"`+topic+`\"}"`) {
		t.Errorf("workflow show --codec-endpoint does not show the tool arguments whole")
	}
}
