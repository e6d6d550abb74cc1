// Package tools holds the executable tools: a Set that maps names to
// implementations, yields the specs the model sees and runs each call under
// its tool's timeout; the demo tools, lookup and find_ticket (reads) and
// create_ticket (a write); and the configuration that adds the tools of MCP
// servers.
//
// create_ticket appends one JSON line per ticket to a file and fsyncs it
// before it returns, so a ticket that was reported exists; a ticket may also
// exist when its caller died before hearing about it, which is exactly the
// case the journal's write guard turns into Indeterminate. With a
// request_id it files at most one ticket per request id (a second call
// answers the first ticket's id), and find_ticket finds a ticket by
// request_id or title ("TICKET-N: TITLE", or "no ticket ..."): the
// idempotency key and the probe of demo-tools.json.
//
// # Packages
//
// tools (this package) owns the Tool interface, Set, the demo tools, Config,
// Server, LoadConfig and Open, and links no MCP client. tools/mcp is the
// MCP client: it connects to one server through
// github.com/modelcontextprotocol/go-sdk and exposes each of its tools as a
// value that satisfies Tool. It imports tools; Open reaches a Config's
// servers through Config.Connect, which the programs set to mcp.Source, so
// a worker that names no server links no MCP SDK.
//
// # Timeouts
//
// Set.Call runs every call under its tool's timeout (DefaultTimeout, 2
// minutes, unless configured). When it fires, Call returns a *TimeoutError
// naming the tool and the timeout; errors.Is(err, ErrTimeout) is true, and
// whether the tool did anything is unknown: a read may be retried, a write
// is Indeterminate. Set.Timeout tells an engine the timeout, so it can set
// its own deadline for the step above it.
//
// # Configuration file
//
// The environment variable AGENTRUN_TOOLS names a JSON file (LoadConfig;
// the programs' configuration, internal/config, reads the variable); without it a worker offers just the demo tools. Open
// connects the servers and builds the Set; Set.Close stops them. Every
// field is optional; example-tools.json uses them all:
//
//	{
//	  "demo": {"lookup": true, "create_ticket": false},
//	  "servers": [
//	    {"name": "memory", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
//	     "env": {"MEMORY_FILE_PATH": "/var/lib/agentrun/memory.jsonl"}},
//	    {"name": "everything", "url": "http://127.0.0.1:3001/mcp",
//	     "headers": {"Authorization": "Bearer replace-me"}}
//	  ],
//	  "tools": {
//	    "create_entities": {"approval": "never", "idempotent": false},
//	    "delete_entities": {"approval": "always", "approval_timeout": "30m"},
//	    "trigger-long-running-operation": {"kind": "write", "idempotent": true, "timeout": "5m"}
//	  }
//	}
//
// The fields:
//
//   - demo: an object turning demo tools on (true) or off (false) by name,
//     "lookup", "create_ticket" and "find_ticket". A demo tool not named is
//     on, except find_ticket, which follows create_ticket (so a file that
//     turned create_ticket off gets no new tool); without "demo" all are
//     on.
//   - servers: an array of MCP servers, whose tools are offered after the
//     demo tools, server by server, in the order each server lists them
//     (all pages). Each server has:
//   - servers[].name: required, unique; names the server in errors and logs.
//   - servers[].command: the program of a stdio server. It is looked up in
//     PATH when it has no slash; a relative path is relative to the
//     worker's working directory. Exactly one of command and url is set.
//   - servers[].args: an array of strings, the program's arguments (with
//     command only).
//   - servers[].env: an object of strings: the server's environment is
//     these plus the worker's HOME, LOGNAME, PATH, SHELL, TERM and USER (a
//     name given here wins; with command only). The server never sees the
//     worker's other variables (provider keys, TEMPORAL_*, AGENTRUN_JOURNAL)
//     unless they are given here. Values under names that say they are
//     secrets (…KEY…, …TOKEN…, …SECRET…, …PASSWORD…) are scrubbed from
//     text that leaves the worker.
//   - servers[].url: the endpoint of a streamable HTTP server, http or
//     https, e.g. "http://127.0.0.1:3001/mcp".
//   - servers[].headers: an object of strings sent with every request to
//     the url's host (with url only; never to another host a redirect
//     leads to), except headers the protocol sets itself (Accept,
//     Content-Type, Mcp-Session-Id and the like). Their values are
//     scrubbed from text that leaves the worker.
//   - tools: an object of per-tool overrides keyed by tool name; the name
//     must be a tool that is offered (a demo tool that is on, or a server's
//     tool). Each override has:
//   - tools.NAME.kind: "read" or "write"; replaces the kind the tool
//     declares (an MCP tool is a read when annotated readOnlyHint true,
//     otherwise a write).
//   - tools.NAME.approval: "always" (every call waits for a person),
//     "never" (calls run without approval) or "deny" (calls never run);
//     without it the policy decides (the demo policy gates every write).
//   - tools.NAME.idempotent: true or false; whether a write is safe to run
//     again, so that an interrupted call is retried instead of becoming
//     Indeterminate. Default: for an MCP write, its idempotentHint; else
//     false.
//   - tools.NAME.timeout: a positive Go duration such as "30s" or "5m";
//     bounds one call. Default "2m".
//   - tools.NAME.approval_timeout: a positive Go duration such as "30m";
//     how long a call that needs approval waits for a person before it is
//     denied with the reason "approval expired after D" (the model reads
//     it). Default: AGENTRUN_APPROVAL_TIMEOUT (Config.ApprovalTimeout);
//     unset, it waits as long as it takes.
//   - tools.NAME.idempotency_key: the name of an argument of a write that
//     takes an idempotency key. The engine fills it with a key derived
//     from the run, the step and the generation (agent.IdempotencyKey),
//     the model's schema loses the argument, and an interrupted call runs
//     again with the same key instead of becoming Indeterminate. Default:
//     for an MCP write, the convention of package tools/mcp; "" turns it
//     off.
//   - tools.NAME.probe: how to ask the world whether an interrupted write
//     took effect: {"tool": a read tool, "args": its arguments (strings may
//     hold {{key}} and {{args.NAME}}, {{args.NAME.0.FIELD}}), "found": a
//     regular expression for an answer saying it did (its first group, or
//     the whole answer, becomes the step's result), "not_found": one for
//     an answer saying it did not (the write runs once more)}. An error, a
//     timeout, or an answer both or neither match leaves the write to a
//     person, unless it has a key. A probe runs without approval.
//   - agents: an object of agent tools keyed by name (1 to 64 letters,
//     digits, '_' or '-'; no offered tool may have it). A call of one runs
//     the agent as a child run of its own (Set.Agent gives its tools;
//     docs/tools.md). Each agent has:
//   - agents.NAME.description: required; tells the calling model what the
//     agent does.
//   - agents.NAME.parameters: the JSON Schema of the call's arguments, an
//     object schema. Default DefaultAgentParameters: one string, "task".
//   - agents.NAME.model: the child's model, in AGENTRUN_MODEL's form.
//     Default: the worker's model.
//   - agents.NAME.system: the child's system prompt. Default none.
//   - agents.NAME.tools: the names of the tools the child may call: offered
//     tools or other agents. Default none: the child only answers.
//   - agents.NAME.approval: per-tool approval overrides of the child's
//     calls ("always", "never" or "deny"), each for one of its tools.
//   - agent_depth: how deeply agents may call agents. Default 3.
//
// An agent that reaches itself (directly or through other agents: the
// path is named), nests deeper than agent_depth, names an unknown tool or
// has an approval for a tool it does not have is refused the same way, and
// so, at start-up, is a model the worker cannot build.
//
// An unknown field, a server with both or neither of command and url, a
// field of the wrong type, a bad duration, kind or approval, an override
// for a tool that no one offers, two tools with the same name (across the
// demo tools and all servers), a key or probe on a read, a key argument the
// tool does not take, a probe tool that is not offered or is a write, a
// probe argument its tool does not take, a template naming an unknown
// field and a bad expression are each refused with one line naming the
// file, the field and what is valid, e.g.
//
//	tools.json: servers[0] ("memory"): both "command" and "url" are set; want exactly one: "command" (a stdio server) or "url" (a streamable HTTP server)
//
// # MCP tools
//
// See package tools/mcp for how an MCP tool's spec and results are built,
// and what happens when a server dies.
package tools
