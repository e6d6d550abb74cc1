package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// writeConfig writes a tools.json into a new directory and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"unknown top-level field", `{"servers": [], "tool": {}}`,
			`top level: unknown field "tool"; valid fields: demo, servers, tools, agents, agent_depth`},
		{"unknown server field", `{"servers": [{"name": "m", "comand": "x"}]}`,
			`servers[0]: unknown field "comand"; valid fields: name, command, args, env, url, headers`},
		{"unknown override field", `{"tools": {"lookup": {"timeout": "1s", "retries": 3}}}`,
			`tools["lookup"]: unknown field "retries"; valid fields: kind, approval, idempotent, timeout, approval_timeout, idempotency_key, probe`},
		{"unknown demo tool", `{"demo": {"lookup": true, "search": false}}`,
			`demo: unknown field "search"; valid fields: lookup, create_ticket, find_ticket`},
		{"field given twice", `{"servers": [{"name": "a", "name": "b", "url": "http://x"}]}`,
			`servers[0]: field "name" is given twice`},
		{"both command and url", `{"servers": [{"name": "m", "command": "mcp-server-memory", "url": "http://127.0.0.1:3001/mcp"}]}`,
			`servers[0] ("m"): both "command" and "url" are set; want exactly one: "command" (a stdio server) or "url" (a streamable HTTP server)`},
		{"neither command nor url", `{"servers": [{"name": "m", "args": ["x"]}]}`,
			`servers[0] ("m"): neither "command" nor "url" is set; want exactly one: "command" (a stdio server) or "url" (a streamable HTTP server)`},
		{"missing name", `{"servers": [{"url": "http://127.0.0.1:3001/mcp"}]}`,
			`servers[0].name: missing; want a name for the server, used in errors and logs`},
		{"duplicate server name", `{"servers": [{"name": "m", "url": "http://a/mcp"}, {"name": "m", "command": "x"}]}`,
			`servers[1].name: "m" is also the name of servers[0]; want a unique name`},
		{"args with url", `{"servers": [{"name": "h", "url": "http://a/mcp", "args": ["-v"]}]}`,
			`servers[0] ("h").args: only valid with "command"; this server has "url"`},
		{"headers with command", `{"servers": [{"name": "s", "command": "x", "headers": {"A": "b"}}]}`,
			`servers[0] ("s").headers: only valid with "url"; this server has "command"`},
		{"bad url", `{"servers": [{"name": "h", "url": "127.0.0.1:3001"}]}`,
			`servers[0] ("h").url: "127.0.0.1:3001" is not a URL; want an http or https URL such as http://127.0.0.1:3001/mcp`},
		{"bad duration", `{"tools": {"read_graph": {"timeout": "2 minutes"}}}`,
			`tools["read_graph"].timeout: "2 minutes" is not a positive duration; want a Go duration such as 30s or 2m (default 2m)`},
		{"zero duration", `{"tools": {"read_graph": {"timeout": "0s"}}}`,
			`tools["read_graph"].timeout: "0s" is not a positive duration; want a Go duration such as 30s or 2m (default 2m)`},
		{"bad approval timeout", `{"tools": {"create_ticket": {"approval_timeout": "soon"}}}`,
			`tools["create_ticket"].approval_timeout: "soon" is not a positive duration; want a Go duration such as 30m or 24h (default: AGENTRUN_APPROVAL_TIMEOUT; unset: never)`},
		{"duration as a number", `{"tools": {"read_graph": {"timeout": 120}}}`,
			`tools["read_graph"].timeout: 120 is not a string; want a JSON string`},
		{"bad kind", `{"tools": {"lookup": {"kind": "readonly"}}}`,
			`tools["lookup"].kind: "readonly" is not a tool kind; want "read" or "write"`},
		{"bad approval", `{"tools": {"lookup": {"approval": "sometimes"}}}`,
			`tools["lookup"].approval: "sometimes" is not an approval; want "always", "never" or "deny"`},
		{"idempotent as a string", `{"tools": {"lookup": {"idempotent": "yes"}}}`,
			`tools["lookup"].idempotent: "yes" is not a boolean; want true or false`},
		{"args not strings", `{"servers": [{"name": "s", "command": "x", "args": [1, 2]}]}`,
			`servers[0].args: [1, 2] is not an array of strings; want e.g. ["--port", "8080"]`},
		{"env value not a string", `{"servers": [{"name": "s", "command": "x", "env": {"PORT": 8080}}]}`,
			`servers[0].env.PORT: 8080 is not a string; want a JSON string`},
		{"servers not an array", `{"servers": {"name": "s"}}`,
			`servers: {"name": "s"} is not an array; want an array of server objects`},
		{"demo not an object", `{"demo": ["lookup"]}`,
			`demo: ["lookup"] is not an object; want {...}`},
		{"not an object", `[]`,
			`top level: [] is not an object; want {...}`},
		{"invalid JSON", "{\n  \"servers\": [\n    {\"name\": \"m\",}\n  ]\n}",
			`line 3, column 18: not valid JSON: invalid character '}' looking for beginning of object key string`},
	} {
		path := writeConfig(t, tc.body)
		_, err := LoadConfig(path)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if got, want := err.Error(), path+": "+tc.want; got != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error has more than one line", tc.name)
		}
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := LoadConfig(path)
	if err == nil || err.Error() != "tools config: open "+path+": no such file or directory" {
		t.Fatalf("LoadConfig(missing): %v", err)
	}
}

func TestExampleConfig(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig("example-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	want := Config{
		Path: "example-tools.json",
		Demo: map[string]bool{"lookup": true, "create_ticket": false},
		Servers: []Server{
			{Name: "memory", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory@2026.8.31"},
				Env: map[string]string{"MEMORY_FILE_PATH": "/var/lib/agentrun/memory.jsonl"}},
			{Name: "everything", URL: "http://127.0.0.1:3001/mcp", Headers: map[string]string{"Authorization": "Bearer replace-me"}},
		},
		Tools: map[string]Override{
			"read_graph":                     {Timeout: 30 * time.Second},
			"create_entities":                {Approval: agent.ApprovalNever, Idempotent: &no},
			"delete_entities":                {Approval: agent.ApprovalAlways, Timeout: 10 * time.Second, ApprovalTimeout: 30 * time.Minute},
			"get-env":                        {Approval: agent.ApprovalDeny},
			"trigger-long-running-operation": {Kind: agent.KindWrite, Idempotent: &yes, Timeout: 5 * time.Minute},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("example config:\n got %+v\nwant %+v", c, want)
	}
}

func TestConfigBuiltInCodeIsValidated(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), Config{Tools: map[string]Override{"lookup": {Timeout: -time.Second}}}, DemoConfig{})
	if err == nil || err.Error() != `tools config: tools["lookup"].timeout: -1s is negative; want a positive Go duration such as 30s or 2m` {
		t.Fatalf("Open with a negative timeout: %v", err)
	}
}
