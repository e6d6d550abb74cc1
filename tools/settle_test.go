package tools

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestSettleDeclarationErrors: every bad key or probe declaration is one
// line naming the file, the tool and what is valid, and nothing opens.
func TestSettleDeclarationErrors(t *testing.T) {
	t.Parallel()
	const probe = `"probe": {"tool": "find_ticket", "args": {"request_id": "{{key}}"}, "found": "^(TICKET-[0-9]+):", "not_found": "^no ticket"}`
	for _, tc := range []struct{ name, body, want string }{
		// checked when the file is read
		{"probe field unknown", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "arg": {}}}}}`,
			`tools["create_ticket"].probe: unknown field "arg"; valid fields: tool, args, found, not_found`},
		{"probe without found", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": {}, "not_found": "x"}}}}`,
			`tools["create_ticket"].probe: "found" is missing; want a regular expression matching an answer that says the write took effect`},
		{"probe args not an object", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": ["x"], "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: args: ["x"] is not a JSON object; want the probe tool's arguments, e.g. {"request_id": "{{key}}"}`},
		{"template names an unknown field", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": {"title": "{{title}}"}, "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: template {{title}} names an unknown field; want "{{key}}" (the idempotency key) or "{{args.NAME}}" (the write's argument NAME; "{{args.NAME.0.FIELD}}" goes deeper)`},
		{"bad expression", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": {}, "found": "(", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: found: "(" is not a regular expression: error parsing regexp: missing closing ): ` + "`(`"},
		{"key not a string", `{"tools": {"create_ticket": {"idempotency_key": true}}}`,
			`tools["create_ticket"].idempotency_key: true is not a string; want a JSON string`},
	} {
		path := writeConfig(t, tc.body)
		_, err := LoadConfig(path)
		if err == nil || err.Error() != path+": "+tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, path+": "+tc.want)
		}
	}
	for _, tc := range []struct{ name, body, want string }{
		// checked when the tools are known
		{"probe tool unknown", `{"tools": {"create_ticket": {"probe": {"tool": "find_tickets", "args": {}, "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: tool: "find_tickets" is not a tool that is offered; want a read tool: lookup, find_ticket`},
		{"probe tool is a write", `{"tools": {"lookup": {"kind": "write"}, "create_ticket": {"probe": {"tool": "lookup", "args": {}, "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: tool: "lookup" is a write; a probe must not change anything: want a read tool: find_ticket`},
		{"key argument missing", `{"tools": {"create_ticket": {"idempotency_key": "request"}}}`,
			`tools["create_ticket"].idempotency_key: "request" is not an argument of create_ticket; its arguments are: body, request_id, title`},
		{"key on a read", `{"tools": {"lookup": {"idempotency_key": "topic"}}}`,
			`tools["lookup"].idempotency_key: lookup is a read; an idempotency key or a probe is for a write (set "kind": "write" if it has side effects)`},
		{"{{key}} without a key", `{"tools": {"create_ticket": {` + probe + `}}}`,
			`tools["create_ticket"].probe: args: {{key}} names the idempotency key, and create_ticket has none; declare "idempotency_key" or use {{args.NAME}}`},
		{"template names an argument the write lacks", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": {"title": "{{args.name}}"}, "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: args: {{args.name}}: "name" is not an argument of create_ticket; its arguments are: body, request_id, title`},
		{"probe argument the probe lacks", `{"tools": {"create_ticket": {"probe": {"tool": "find_ticket", "args": {"id": "{{args.title}}"}, "found": "a", "not_found": "b"}}}}`,
			`tools["create_ticket"].probe: args: "id" is not an argument of find_ticket; its arguments are: request_id, title`},
	} {
		path := writeConfig(t, tc.body)
		cfg, err := LoadConfig(path)
		if err != nil {
			t.Errorf("%s: load: %v", tc.name, err)
			continue
		}
		s, err := Open(t.Context(), cfg, DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})
		if err == nil {
			s.Close()
		}
		if err == nil || err.Error() != path+": "+tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, path+": "+tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error has more than one line", tc.name)
		}
	}
}

// TestDemoToolsFile: the demo tools file declares create_ticket's key and
// probe; the model does not see the key argument, and the probe's
// templates are the key.
func TestDemoToolsFile(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig("demo-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), cfg, DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ct, _ := s.Lookup("create_ticket")
	spec := ct.Spec()
	if spec.IdempotencyKey != "request_id" || spec.Probe == nil || spec.Probe.Tool != "find_ticket" {
		t.Fatalf("create_ticket: key %q, probe %+v; want request_id and find_ticket", spec.IdempotencyKey, spec.Probe)
	}
	if strings.Contains(string(spec.Schema), "request_id") {
		t.Fatalf("the model sees the key argument: %s", spec.Schema)
	}
	// Without declarations the model sees it, and nothing is settled.
	plain, err := Open(t.Context(), Config{}, DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	ct, _ = plain.Lookup("create_ticket")
	if spec := ct.Spec(); !strings.Contains(string(spec.Schema), "request_id") || spec.IdempotencyKey != "" || spec.Probe != nil {
		t.Fatalf("undeclared create_ticket: %+v", spec)
	}
}

// TestTicketStoreDeduplicates: a second create_ticket with the same
// request_id files nothing and answers the first ticket's id; find_ticket
// finds a ticket by request id or title, and says when there is none.
func TestTicketStoreDeduplicates(t *testing.T) {
	t.Parallel()
	s, err := NewSet(Demo(DemoConfig{Tickets: filepath.Join(t.TempDir(), "tickets.jsonl")})...)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) agent.ToolResult {
		t.Helper()
		r, err := s.Call(t.Context(), name, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct{ tool, args, want string }{
		{"find_ticket", `{"request_id": "r1"}`, "no ticket with request_id r1"},
		{"create_ticket", `{"title": "a", "request_id": "r1"}`, "TICKET-1"},
		{"create_ticket", `{"title": "a again", "request_id": "r1"}`, "TICKET-1"},
		{"create_ticket", `{"title": "b"}`, "TICKET-2"},
		{"create_ticket", `{"title": "b"}`, "TICKET-3"}, // no request id: no deduplication
		{"find_ticket", `{"request_id": "r1"}`, "TICKET-1: a"},
		{"find_ticket", `{"title": "b"}`, "TICKET-2: b"},
		{"find_ticket", `{"title": "c"}`, `no ticket titled "c"`},
	} {
		if r := call(c.tool, c.args); r.Content != c.want || r.IsError {
			t.Fatalf("%s %s: %+v, want %q", c.tool, c.args, r, c.want)
		}
	}
	if r := call("find_ticket", `{"request_id": "r1", "title": "a"}`); !r.IsError {
		t.Fatalf("find_ticket with both: %+v, want an error result", r)
	}
	ts, err := ReadTickets(s.tools[1].(*TicketStore).Path)
	if err != nil || len(ts) != 3 {
		t.Fatalf("tickets %+v, %v; want 3", ts, err)
	}
}
