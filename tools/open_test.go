package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/plumbing/secret"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/tools/mcp"
)

// open loads the config file body and opens it; the tools.Set is closed when the
// test ends.
func open(t *testing.T, body string) (*tools.Set, error) {
	t.Helper()
	cfg, err := tools.LoadConfig(tools.WriteConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tools.Open(t.Context(), withMCP(cfg), tools.DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})
	if err == nil {
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	return s, err
}

// describe summarizes each tool of a set: name, kind, idempotence, approval
// and timeout.
func describe(s *tools.Set) []string {
	var out []string
	for _, spec := range s.Specs() {
		d := fmt.Sprintf("%s: %s", spec.Name, spec.Kind)
		if spec.Idempotent {
			d += " idempotent"
		}
		if spec.Approval != "" {
			d += " approval=" + spec.Approval
		}
		out = append(out, d+" timeout="+s.Timeout(spec.Name).String())
	}
	return out
}

// withMCP is cfg with the MCP client of the programs.
func withMCP(cfg tools.Config) tools.Config {
	cfg.Connect = mcp.Source
	return cfg
}

// TestOpenServerWithoutClient: package tools links no MCP client, so a
// configuration that names a server and gives no Connect is refused,
// naming the server, before anything starts.
func TestOpenServerWithoutClient(t *testing.T) {
	t.Parallel()
	path := tools.WriteConfig(t, `{"servers": [{"name": "gone", "command": "/nonexistent/mcp-server"}]}`)
	cfg, err := tools.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Open(t.Context(), cfg, tools.DemoConfig{})
	want := path + `: servers[0] ("gone"): no MCP client to connect with: set Config.Connect (tools/mcp's Source)`
	if err == nil || err.Error() != want {
		t.Fatalf("Open:\n got %v\nwant %s", err, want)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestOpenDemoTools(t *testing.T) {
	t.Parallel()
	s, err := tools.Open(t.Context(), tools.Config{}, tools.DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(s), []string{"lookup: read timeout=2m0s", "create_ticket: write timeout=2m0s", "find_ticket: read timeout=2m0s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("zero config:\n got %q\nwant %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	off, err := open(t, `{"demo": {"lookup": false, "find_ticket": false}, "tools": {"create_ticket": {"approval": "never"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(off), []string{"create_ticket: write approval=never timeout=2m0s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lookup off:\n got %q\nwant %q", got, want)
	}
}

func TestOpenOverrideForAToolNobodyOffers(t *testing.T) {
	t.Parallel()
	body := `{"demo": {"create_ticket": false}, "tools": {"create_ticket": {"approval": "never"}}}`
	path := tools.WriteConfig(t, body)
	cfg, err := tools.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Open(t.Context(), withMCP(cfg), tools.DemoConfig{})
	want := path + `: tools["create_ticket"]: no demo tool that is on or server offers a tool named "create_ticket"; the tools offered are: lookup`
	if err == nil || err.Error() != want {
		t.Fatalf("Open:\n got %v\nwant %s", err, want)
	}
}

func TestOpenMemoryServerWithOverrides(t *testing.T) {
	t.Parallel()
	bin := mcptest.Bin(t, mcptest.Memory)
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	s, err := open(t, `{
  "demo": {"create_ticket": false},
  "servers": [{"name": "memory", "command": `+quote(bin)+`, "env": {"MEMORY_FILE_PATH": `+quote(memory)+`}}],
  "tools": {
    "lookup": {"timeout": "3s"},
    "read_graph": {"kind": "write", "approval": "always"},
    "create_entities": {"approval": "never", "idempotent": true, "timeout": "5s"},
    "delete_entities": {"idempotent": false, "approval": "deny"},
    "search_nodes": {"kind": "read", "timeout": "1m30s"}
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lookup: read timeout=3s",
		"create_entities: write idempotent approval=never timeout=5s",
		"create_relations: write timeout=2m0s",
		"add_observations: write timeout=2m0s",
		"delete_entities: write approval=deny timeout=2m0s",
		"delete_observations: write idempotent timeout=2m0s",
		"delete_relations: write idempotent timeout=2m0s",
		"read_graph: write approval=always timeout=2m0s",
		"search_nodes: read timeout=1m30s",
		"open_nodes: read timeout=2m0s",
	}
	if got := describe(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("tools:\n got %q\nwant %q", got, want)
	}
	// The policy sees the overrides.
	gate := agent.GateWrites{}
	for name, want := range map[string]agent.Verdict{"create_entities": agent.Allow, "read_graph": agent.RequireApproval, "delete_entities": agent.Deny, "open_nodes": agent.Allow, "add_observations": agent.RequireApproval} {
		tool, _ := s.Lookup(name)
		if got := gate.Decide(tool.Spec(), agent.ToolCall{Name: name}).Verdict; got != want {
			t.Errorf("policy verdict for %s = %v, want %v", name, got, want)
		}
	}

	r, err := s.Call(t.Context(), "create_entities", json.RawMessage(`{"entities":[{"name":"vpn","entityType":"service","observations":[]}]}`))
	if err != nil || r.IsError {
		t.Fatalf("create_entities: %+v, %v", r, err)
	}
	r, err = s.Call(t.Context(), "open_nodes", json.RawMessage(`{"names":["vpn"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var graph struct {
		Entities []struct{ Name, EntityType string }
	}
	if err := json.Unmarshal([]byte(r.Content), &graph); err != nil || len(graph.Entities) != 1 || graph.Entities[0].Name != "vpn" || graph.Entities[0].EntityType != "service" {
		t.Fatalf("open_nodes: %s (%v)", r.Content, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(t.Context(), "open_nodes", json.RawMessage(`{"names":["vpn"]}`)); !errors.Is(err, mcp.ErrClosed) {
		t.Fatalf("call after Close: %v, want mcp.ErrClosed", err)
	}
}

func TestOpenTwoToolsWithOneName(t *testing.T) {
	t.Parallel()
	bin := mcptest.Bin(t, mcptest.Memory)
	dir := t.TempDir()
	body := `{"servers": [
  {"name": "notes", "command": ` + quote(bin) + `, "env": {"MEMORY_FILE_PATH": ` + quote(filepath.Join(dir, "a.jsonl")) + `}},
  {"name": "facts", "command": ` + quote(bin) + `, "env": {"MEMORY_FILE_PATH": ` + quote(filepath.Join(dir, "b.jsonl")) + `}}
]}`
	path := tools.WriteConfig(t, body)
	cfg, err := tools.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Open(t.Context(), withMCP(cfg), tools.DemoConfig{})
	want := path + `: servers[1] ("facts"): tool "create_entities" is also offered by servers[0] ("notes"); tool names must be unique across the demo tools and all servers`
	if err == nil || err.Error() != want {
		t.Fatalf("Open:\n got %v\nwant %s", err, want)
	}

	// A server tool named like a demo tool.
	server := sdk.NewServer(&sdk.Implementation{Name: "lookalike", Version: "v0"}, nil)
	server.AddTool(&sdk.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	path = tools.WriteConfig(t, `{"servers": [{"name": "lookalike", "url": `+quote(mcptest.Serve(t, server, nil))+`}]}`)
	if cfg, err = tools.LoadConfig(path); err != nil {
		t.Fatal(err)
	}
	_, err = tools.Open(t.Context(), withMCP(cfg), tools.DemoConfig{})
	want = path + `: servers[0] ("lookalike"): tool "lookup" is also a demo tool; tool names must be unique: turn the demo tool off with "demo": {"lookup": false}`
	if err == nil || err.Error() != want {
		t.Fatalf("Open:\n got %v\nwant %s", err, want)
	}
}

func TestOpenServerThatDoesNotStart(t *testing.T) {
	t.Parallel()
	path := tools.WriteConfig(t, `{"servers": [{"name": "gone", "command": "/nonexistent/mcp-server"}]}`)
	cfg, err := tools.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tools.Open(t.Context(), withMCP(cfg), tools.DemoConfig{})
	want := path + `: servers[0] ("gone"): mcp server "gone": start /nonexistent/mcp-server: fork/exec /nonexistent/mcp-server: no such file or directory`
	if err == nil || err.Error() != want {
		t.Fatalf("Open:\n got %v\nwant %s", err, want)
	}
}

func TestMCPToolTimeoutOverHTTP(t *testing.T) {
	t.Parallel()
	url := mcptest.EverythingHTTP(t)
	s, err := open(t, `{
  "servers": [{"name": "everything", "url": `+quote(url)+`}],
  "tools": {"trigger-long-running-operation": {"timeout": "300ms"}}
}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Timeout("trigger-long-running-operation"); got != 300*time.Millisecond {
		t.Fatalf("timeout = %s", got)
	}
	start := time.Now()
	_, err = s.Call(t.Context(), "trigger-long-running-operation", json.RawMessage(`{"duration":30,"steps":1}`))
	elapsed := time.Since(start)
	want := `tool "trigger-long-running-operation" did not finish within its timeout of 300ms`
	if !errors.Is(err, tools.ErrTimeout) || err.Error() != want {
		t.Fatalf("call: %v, want tools.ErrTimeout %q", err, want)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("the call returned after %s", elapsed)
	}
	// The session survives the abandoned call.
	r, err := s.Call(t.Context(), "echo", json.RawMessage(`{"message":"still here"}`))
	if err != nil || r != (agent.ToolResult{Content: "Echo: still here"}) {
		t.Fatalf("echo after the timeout: %+v, %v", r, err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %s", url)
	}
}

// TestServerSeesOnlyWhatTheFileGives: a Set opened from a tools file whose
// server gets a token from the file (env) runs the npm everything server
// with that token and none of the worker's keys; what the server reports
// (get-env) comes back with the token scrubbed.
func TestServerSeesOnlyWhatTheFileGives(t *testing.T) {
	bin := mcptest.Bin(t, mcptest.Everything)
	t.Setenv("OPENAI_API_KEY", "sk-openai-set-test-0001") // not parallel: the process's environment
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-set-test-0002")
	const token = "ghp-from-the-file-0003"
	s, err := tools.Open(t.Context(), tools.Config{Servers: []tools.Server{{Name: "everything", Command: bin, Env: map[string]string{"GITHUB_TOKEN": token}}}, Connect: mcp.Source}, tools.DemoConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	res, err := s.Call(t.Context(), "get-env", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]string
	if err := json.Unmarshal([]byte(res.Content), &vars); err != nil {
		t.Fatalf("get-env: %v: %s", err, res.Content)
	}
	if _, ok := vars["OPENAI_API_KEY"]; ok || strings.Contains(res.Content, "sk-") {
		t.Errorf("the server sees the worker's keys: %s", res.Content)
	}
	if _, ok := vars["ANTHROPIC_API_KEY"]; ok {
		t.Errorf("the server sees ANTHROPIC_API_KEY: %s", res.Content)
	}
	if vars["GITHUB_TOKEN"] != secret.Redacted || strings.Contains(res.Content, token) {
		t.Errorf("GITHUB_TOKEN = %q, want the file's token, scrubbed to %s", vars["GITHUB_TOKEN"], secret.Redacted)
	}
}
