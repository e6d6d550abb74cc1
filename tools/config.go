package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Config says which tools a worker offers: the demo tools that are on, the
// MCP servers whose tools are offered, and per-tool overrides. The zero
// value offers all demo tools with default settings. The file format is
// described in the package documentation.
type Config struct {
	// Path is the file the configuration was read from; errors name it.
	// Default "": a configuration built in code, named "tools config".
	Path string
	// Demo turns demo tools on (true) or off (false) by name: "lookup",
	// "create_ticket", "find_ticket". A demo tool not named is on, except
	// find_ticket, which follows create_ticket. Default: all on.
	Demo map[string]bool
	// Servers are the MCP servers whose tools are offered, after the demo
	// tools, in this order. Default none.
	Servers []Server
	// Tools overrides, by tool name, how a tool is classified, gated and
	// bounded. Every name must be a tool that is offered. Default none.
	Tools map[string]Override
	// Agents declares agent tools by name: a call runs a child run
	// (agents.go). Default none.
	Agents map[string]Agent
	// AgentDepth is how deeply agent tools may nest ("agent_depth").
	// Default 0: DefaultAgentDepth.
	AgentDepth int
	// ApprovalTimeout is how long a call of a tool without its own
	// approval_timeout may wait for approval before it is denied as
	// expired. It is not read from the file: AGENTRUN_APPROVAL_TIMEOUT.
	// Default 0: it waits as long as it takes.
	ApprovalTimeout time.Duration
	// Logger receives warnings, such as an MCP server being restarted. It
	// is not read from the file. Default: discard.
	Logger *slog.Logger
	// Connect connects Open to the servers of Servers; it is not read from
	// the file. Default nil: Open refuses a configuration that names a
	// server. The programs set tools/mcp's Source.
	Connect Connect
}

// demoNames are the names of the demo tools, in order.
var demoNames = func() []string {
	var names []string
	for _, t := range Demo(DemoConfig{}) {
		names = append(names, t.Spec().Name)
	}
	return names
}()

func (c Config) file() string {
	if c.Path == "" {
		return "tools config"
	}
	return c.Path
}

// fail formats a configuration error: "FILE: FIELD: PROBLEM".
func (c Config) fail(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", c.file(), field, fmt.Sprintf(format, args...))
}

func serverField(i int, s Server) string {
	if s.Name == "" {
		return fmt.Sprintf("servers[%d]", i)
	}
	return fmt.Sprintf("servers[%d] (%q)", i, s.Name)
}

// validate checks the rules that need no server: it returns the first
// broken one.
func (c Config) validate() error {
	for _, k := range sortedKeys(c.Demo) {
		if !slices.Contains(demoNames, k) {
			return c.fail("demo", "unknown demo tool %q; valid: %s", k, strings.Join(demoNames, ", "))
		}
	}
	for i, s := range c.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		if s.Name == "" {
			return c.fail(f+".name", "missing; want a name for the server, used in errors and logs")
		}
		for j := range i {
			if c.Servers[j].Name == s.Name {
				return c.fail(f+".name", "%q is also the name of servers[%d]; want a unique name", s.Name, j)
			}
		}
		f = serverField(i, s)
		switch {
		case s.Command != "" && s.URL != "":
			return c.fail(f, `both "command" and "url" are set; want exactly one: "command" (a stdio server) or "url" (a streamable HTTP server)`)
		case s.Command == "" && s.URL == "":
			return c.fail(f, `neither "command" nor "url" is set; want exactly one: "command" (a stdio server) or "url" (a streamable HTTP server)`)
		case s.URL != "" && len(s.Args) > 0:
			return c.fail(f+".args", `only valid with "command"; this server has "url"`)
		case s.URL != "" && len(s.Env) > 0:
			return c.fail(f+".env", `only valid with "command"; this server has "url"`)
		case s.Command != "" && len(s.Headers) > 0:
			return c.fail(f+".headers", `only valid with "url"; this server has "command"`)
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return c.fail(f+".url", "%q is not a URL; want an http or https URL such as http://127.0.0.1:3001/mcp", s.URL)
			}
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		o, f := c.Tools[name], fmt.Sprintf("tools[%q]", name)
		switch {
		case name == "":
			return c.fail(f, "empty tool name; want the name of a tool that is offered")
		case o.Kind != "" && o.Kind != agent.KindRead && o.Kind != agent.KindWrite:
			return c.fail(f+".kind", "%q is not a tool kind; want %q or %q", o.Kind, agent.KindRead, agent.KindWrite)
		case o.Approval != "" && o.Approval != agent.ApprovalAlways && o.Approval != agent.ApprovalNever && o.Approval != agent.ApprovalDeny:
			return c.fail(f+".approval", "%q is not an approval; want %q, %q or %q", o.Approval, agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny)
		case o.Timeout < 0:
			return c.fail(f+".timeout", "%s is negative; want a positive Go duration such as 30s or 2m", o.Timeout)
		case o.ApprovalTimeout < 0:
			return c.fail(f+".approval_timeout", "%s is negative; want a positive Go duration such as 30m or 24h", o.ApprovalTimeout)
		}
		if o.Probe != nil {
			if err := checkProbe(*o.Probe); err != nil {
				return c.fail(f+".probe", "%v", err)
			}
		}
	}
	return c.validateAgents()
}

// LoadConfig reads and checks a tools configuration file (JSON). Every
// error is one line naming the file, the field and what is valid. Rules
// that need the servers (an override for a tool nobody offers, two tools
// with one name) are checked by Open.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("tools config: %w", err)
	}
	c, err := parseConfig(path, b)
	if err != nil {
		return Config{}, err
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// The fields of each object of the file, in the order the docs give them.
var (
	topFields      = []string{"demo", "servers", "tools", "agents", "agent_depth"}
	serverFields   = []string{"name", "command", "args", "env", "url", "headers"}
	overrideFields = []string{"kind", "approval", "idempotent", "timeout", "approval_timeout", "idempotency_key", "probe"}
	probeFields    = []string{"tool", "args", "found", "not_found"}
)

func parseConfig(path string, b []byte) (Config, error) {
	c := Config{Path: path}
	if err := json.Unmarshal(b, new(any)); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(b, se.Offset)
			return c, fmt.Errorf("%s: line %d, column %d: not valid JSON: %v", path, line, col, err)
		}
		return c, fmt.Errorf("%s: not valid JSON: %v", path, err)
	}
	top, err := object(c, "top level", b, topFields)
	if err != nil {
		return c, err
	}
	for _, m := range top {
		switch m.key {
		case "demo":
			demo, err := object(c, "demo", m.val, demoNames)
			if err != nil {
				return c, err
			}
			c.Demo = map[string]bool{}
			for _, d := range demo {
				var on bool
				if err := json.Unmarshal(d.val, &on); err != nil {
					return c, c.fail("demo."+d.key, "%s is not a boolean; want true or false", short(d.val))
				}
				c.Demo[d.key] = on
			}
		case "servers":
			var elems []json.RawMessage
			if err := json.Unmarshal(m.val, &elems); err != nil {
				return c, c.fail("servers", "%s is not an array; want an array of server objects", short(m.val))
			}
			for i, e := range elems {
				s, err := parseServer(c, fmt.Sprintf("servers[%d]", i), e)
				if err != nil {
					return c, err
				}
				c.Servers = append(c.Servers, s)
			}
		case "agents":
			if c.Agents, err = parseAgents(c, m.val); err != nil {
				return c, err
			}
		case "agent_depth":
			if json.Unmarshal(m.val, &c.AgentDepth) != nil {
				return c, c.fail("agent_depth", "%s is not a whole number; want the most levels agent tools may nest (default %d)", short(m.val), DefaultAgentDepth)
			}
		case "tools":
			ts, err := object(c, "tools", m.val, nil)
			if err != nil {
				return c, err
			}
			c.Tools = map[string]Override{}
			for _, t := range ts {
				o, err := parseOverride(c, fmt.Sprintf("tools[%q]", t.key), t.val)
				if err != nil {
					return c, err
				}
				c.Tools[t.key] = o
			}
		}
	}
	return c, nil
}

func parseServer(c Config, f string, raw json.RawMessage) (Server, error) {
	var s Server
	ms, err := object(c, f, raw, serverFields)
	if err != nil {
		return s, err
	}
	for _, m := range ms {
		g := f + "." + m.key
		switch m.key {
		case "name":
			err = str(c, g, m.val, &s.Name)
		case "command":
			err = str(c, g, m.val, &s.Command)
		case "url":
			err = str(c, g, m.val, &s.URL)
		case "args":
			if json.Unmarshal(m.val, &s.Args) != nil {
				err = c.fail(g, "%s is not an array of strings; want e.g. [\"--port\", \"8080\"]", short(m.val))
			}
		case "env":
			s.Env, err = strMap(c, g, m.val)
		case "headers":
			s.Headers, err = strMap(c, g, m.val)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func parseOverride(c Config, f string, raw json.RawMessage) (Override, error) {
	var o Override
	ms, err := object(c, f, raw, overrideFields)
	if err != nil {
		return o, err
	}
	for _, m := range ms {
		g := f + "." + m.key
		var s string
		switch m.key {
		case "kind":
			if err := str(c, g, m.val, &s); err != nil {
				return o, err
			}
			o.Kind = agent.Kind(s)
		case "approval":
			if err := str(c, g, m.val, &o.Approval); err != nil {
				return o, err
			}
		case "idempotent":
			var b bool
			if json.Unmarshal(m.val, &b) != nil {
				return o, c.fail(g, "%s is not a boolean; want true or false", short(m.val))
			}
			o.Idempotent = &b
		case "timeout":
			d, err := duration(c, g, m.val, "30s or 2m (default 2m)")
			if err != nil {
				return o, err
			}
			o.Timeout = d
		case "approval_timeout":
			d, err := duration(c, g, m.val, "30m or 24h (default: AGENTRUN_APPROVAL_TIMEOUT; unset: never)")
			if err != nil {
				return o, err
			}
			o.ApprovalTimeout = d
		case "idempotency_key":
			if err := str(c, g, m.val, &s); err != nil {
				return o, err
			}
			o.IdempotencyKey = &s
		case "probe":
			p, err := parseProbe(c, g, m.val)
			if err != nil {
				return o, err
			}
			o.Probe = p
		}
	}
	return o, nil
}

// parseProbe reads a probe: {"tool", "args", "found", "not_found"}, all
// required; the rules that need the tools are checked by Open.
func parseProbe(c Config, f string, raw json.RawMessage) (*agent.Probe, error) {
	ms, err := object(c, f, raw, probeFields)
	if err != nil {
		return nil, err
	}
	p := &agent.Probe{}
	for _, m := range ms {
		g := f + "." + m.key
		switch m.key {
		case "tool":
			err = str(c, g, m.val, &p.Tool)
		case "args":
			p.Args = m.val
		case "found":
			err = str(c, g, m.val, &p.Found)
		case "not_found":
			err = str(c, g, m.val, &p.NotFound)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// duration reads a positive Go duration given as a string.
func duration(c Config, f string, raw json.RawMessage, want string) (time.Duration, error) {
	var s string
	if err := str(c, f, raw, &s); err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, c.fail(f, "%q is not a positive duration; want a Go duration such as %s", s, want)
	}
	return d, nil
}

type member struct {
	key string
	val json.RawMessage
}

// object decodes raw (valid JSON) as an object, in file order, without the
// members whose value is null. Keys must be among valid unless valid is
// nil; a key may appear once.
func object(c Config, f string, raw json.RawMessage, valid []string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, c.fail(f, "%s is not an object; want {...}", short(raw))
	}
	var ms []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, c.fail(f, "%v", err)
		}
		key := tok.(string) // the input is valid JSON: an object key is a string
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, c.fail(f, "%v", err)
		}
		if valid != nil && !slices.Contains(valid, key) {
			return nil, c.fail(f, "unknown field %q; valid fields: %s", key, strings.Join(valid, ", "))
		}
		if seen[key] {
			return nil, c.fail(f, "field %q is given twice", key)
		}
		seen[key] = true
		if string(val) != "null" {
			ms = append(ms, member{key, val})
		}
	}
	return ms, nil
}

func str(c Config, f string, raw json.RawMessage, dst *string) error {
	if json.Unmarshal(raw, dst) != nil {
		return c.fail(f, "%s is not a string; want a JSON string", short(raw))
	}
	return nil
}

func strMap(c Config, f string, raw json.RawMessage) (map[string]string, error) {
	ms, err := object(c, f, raw, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		var s string
		if err := str(c, f+"."+m.key, m.val, &s); err != nil {
			return nil, err
		}
		out[m.key] = s
	}
	return out, nil
}

// short renders a JSON value for an error message.
func short(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// position turns a byte offset into a 1-based line and column.
func position(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
