package tools

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentrun/agentrun/plumbing/secret"
)

// Open builds the tools a configuration names: the demo tools that are on
// (made from demo), then the tools of each MCP server in order, with the
// overrides applied. It connects to every server and lists its tools; the
// servers run until the Set is closed. The zero Config gives just the demo
// tools. Errors name the file and the field, as LoadConfig's do. The
// servers are reached through cfg.Connect.
func Open(ctx context.Context, cfg Config, demo DemoConfig) (*Set, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var (
		ts      []Tool
		from    = map[string]string{} // tool name -> where it comes from, for errors
		closers []io.Closer
	)
	fail := func(err error) (*Set, error) {
		_ = closeAll(closers)
		return nil, err
	}
	for _, t := range Demo(demo) {
		name := t.Spec().Name
		on, ok := cfg.Demo[name]
		if !ok && name == "find_ticket" {
			// Not named, it comes with the ticket store it reads: a file
			// that turned create_ticket off gets no new tool.
			on, ok = cfg.Demo["create_ticket"]
		}
		if ok && !on {
			continue
		}
		ts = append(ts, t)
		from[name] = "demo"
	}
	for i, s := range cfg.Servers {
		f := serverField(i, s)
		// What the file gives a server to authenticate is a secret of the
		// worker too: scrubbed from whatever text leaves it.
		for _, v := range s.Headers {
			secret.Add(v)
		}
		for k, v := range s.Env {
			if secret.SecretName(k) {
				secret.Add(v)
			}
		}
		if cfg.Connect == nil {
			return fail(cfg.fail(f, "no MCP client to connect with: set Config.Connect (tools/mcp's Source)"))
		}
		list, c, err := cfg.Connect(ctx, s, cfg.Logger)
		if err != nil {
			return fail(fmt.Errorf("%s: %s: %w", cfg.file(), f, err))
		}
		closers = append(closers, c)
		for _, t := range list {
			name := t.Spec().Name
			switch prev, dup := from[name]; {
			case dup && prev == "demo":
				return fail(cfg.fail(f, "tool %q is also a demo tool; tool names must be unique: turn the demo tool off with \"demo\": {%q: false}", name, name))
			case dup:
				return fail(cfg.fail(f, "tool %q is also offered by %s; tool names must be unique across the demo tools and all servers", name, prev))
			}
			from[name] = f
			ts = append(ts, t)
		}
	}
	for _, name := range sortedKeys(cfg.Tools) {
		if _, ok := from[name]; !ok {
			var names []string
			for _, t := range ts {
				names = append(names, t.Spec().Name)
			}
			return fail(cfg.fail(fmt.Sprintf("tools[%q]", name), "no demo tool that is on or server offers a tool named %q; the tools offered are: %s", name, strings.Join(names, ", ")))
		}
	}
	var offered []string
	for _, t := range ts {
		offered = append(offered, t.Spec().Name)
	}
	if err := cfg.checkAgentTools(offered, from); err != nil {
		return fail(err)
	}
	for i, t := range ts {
		o, ok := cfg.Tools[t.Spec().Name]
		if cfg.ApprovalTimeout > 0 && o.ApprovalTimeout == 0 {
			o.ApprovalTimeout, ok = cfg.ApprovalTimeout, true
		}
		if ok {
			ts[i] = Apply(t, o)
		}
	}
	for _, name := range sortedKeys(cfg.Agents) {
		ts = append(ts, newAgentTool(cfg.Agents[name]))
	}
	ts, err := settleRules(ts, func(name string) string { return cfg.file() + ": " + fmt.Sprintf("tools[%q]", name) })
	if err != nil {
		return fail(err)
	}
	set, err := NewSet(ts...)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", cfg.file(), err)) // unreachable: names were checked above
	}
	set.closers = closers
	set.agents = cfg.Agents
	return set, nil
}
