package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestCodecLogsHoldNoPayloadText: with the codec's keys set, the workers'
// logs carry no payload text, while the runs behave as without keys. A
// write settled by a probe after its worker was SIGKILLed (the probe's
// answer names the ticket's title), a read whose MCP server fails twice
// with a marker in its error (the run's "step retrying" and the sdk's
// "Activity error." lines), an operator signal refused with a marker in
// its reason and a deny whose reason holds a marker: none of those texts
// is in either worker's output; the lines are there, with sizes and types.
func TestCodecLogsHoldNoPayloadText(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	keyed := keyedClient(t, srv)
	worker, starter := testenv.Program(t, "worker"), testenv.Program(t, "starter")
	signal := func(run, name string, payload any) {
		t.Helper()
		if err := keyed.SignalWorkflow(t.Context(), run, "", name, payload); err != nil {
			t.Fatalf("signal %s: %v", name, err)
		}
	}
	start := func(f *fleet, env []string, run string) {
		t.Helper()
		if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, prompt); code != 0 {
			t.Fatalf("starter: exit %d\n%s", code, out)
		}
	}
	var logs []string

	// A probe's answer: the write's worker is killed after the ticket is
	// filed; the next worker asks find_ticket, whose answer names the title.
	f := newFleet(t, srv)
	tools := ticketTools(t, testenv.ProbeByTitle)
	w1 := testenv.Start(t, f.env(keyEnv, tools, testenv.HoldAfter+"=create_ticket"), worker)
	const probed = "e2e-logs-probe"
	start(f, f.env(keyEnv, tools), probed)
	waitStatusWith(t, keyed, probed, "AwaitingApproval", time.Minute)
	signal(probed, "approve", map[string]string{"Marker": ticketStep})
	testenv.CrashInTicket(t, w1, testenv.HoldAfter, f.tickets)
	w2 := testenv.Start(t, f.env(keyEnv, tools), worker)
	s := waitStatusWith(t, keyed, probed, "Completed", time.Minute)
	if len(s.Settled) != 1 || s.Settled[0].Settled.Probe == nil || !strings.Contains(s.Settled[0].Settled.Probe.Answer, ticketTitle) || f.ticketCount(t) != 1 {
		t.Fatalf("settled %s, %d tickets; want one write settled by find_ticket's answer naming %q, one ticket", testenv.MustJSON(s.Settled), f.ticketCount(t), ticketTitle)
	}
	logs = append(logs, w1.Output(), w2.Output())

	// A last error, a refused signal's reason and a deny reason.
	const errMarker, rejMarker, denyMarker = "errmarker4b1d", "rejmarker77c2", "denymarker9e05"
	var calls atomic.Int32
	server := sdk.NewServer(&sdk.Implementation{Name: "flaky", Version: "v0"}, nil)
	server.AddTool(&sdk.Tool{Name: "flaky_lookup", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if calls.Add(1) <= 2 {
				return nil, fmt.Errorf("the backend said %s", errMarker)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "policy: a ticket"}}}, nil
		})
	dir := t.TempDir()
	toolsFile, script := filepath.Join(dir, "tools.json"), filepath.Join(dir, "script.json")
	write := func(path string, v any) {
		if err := os.WriteFile(path, []byte(testenv.MustJSON(v)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(toolsFile, map[string]any{"servers": []map[string]any{{"name": "flaky", "url": mcptest.Serve(t, server, nil)}}})
	write(script, map[string]any{"turns": []map[string]any{
		{"tool_calls": []map[string]any{{"name": "flaky_lookup", "args": map[string]any{}}}},
		{"tool_calls": []map[string]any{{"name": "create_ticket", "args": map[string]string{"title": "t", "body": "b"}}}},
		{"text": "filed {{last_tool_result}}", "text_on_error": "not filed: {{last_tool_result}}"},
	}})
	g := newFleet(t, srv)
	g.queue += "-deny" // not the queue of the first two workers
	env := g.env(keyEnv, "AGENTRUN_TOOLS="+toolsFile, "AGENTRUN_MODEL=scripted:"+script)
	w3 := testenv.Start(t, env, worker)
	const denied = "e2e-logs-deny"
	start(g, env, denied)
	waitStatusWith(t, keyed, denied, "AwaitingApproval", 2*time.Minute)
	signal(denied, "approve", map[string]string{"Marker": "tool/9/0/" + rejMarker})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		s, err := stateWith(t, keyed, denied)
		if err == nil && len(s.Rejected) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused signal is not in the state: %v %s", err, testenv.MustJSON(s.Rejected))
		}
	}
	signal(denied, "deny", map[string]string{"Marker": ticketStep, "Reason": "not now, " + denyMarker})
	s = waitStatusWith(t, keyed, denied, "Completed", time.Minute)
	if !strings.Contains(s.Rejected[0].Reason, rejMarker) {
		t.Fatalf("refused signal %s: want a reason naming %q", testenv.MustJSON(s.Rejected), rejMarker)
	}
	var a struct {
		Answer string `json:"answer"`
	}
	if err := keyed.GetWorkflow(t.Context(), denied, "").Get(t.Context(), &a); err != nil || !strings.Contains(a.Answer, "not filed") || !strings.Contains(a.Answer, denyMarker) {
		t.Fatalf("answer %q (%v): want the deny's reason", a.Answer, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("flaky_lookup calls: %d, want 3 (two failed attempts, then the one that answered)", n)
	}
	logs = append(logs, w3.Output())

	all := strings.Join(logs, "\n")
	for _, text := range []string{ticketTitle, "orders database", errMarker, rejMarker, denyMarker} {
		if strings.Contains(all, text) {
			t.Errorf("the workers' logs hold %q:\n%s", text, linesWith(all, text))
		}
	}
	for _, want := range []string{"write settled without a person", "how.bytes=", "step retrying", "last_error.bytes=", "rejected operator signal", "reason.bytes="} {
		if !strings.Contains(all, want) {
			t.Errorf("the workers' logs lack %q", want)
		}
	}
}

// linesWith are the lines of text that hold s.
func linesWith(text, s string) string {
	var out []string
	for l := range strings.Lines(text) {
		if strings.Contains(l, s) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}
