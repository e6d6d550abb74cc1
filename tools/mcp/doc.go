// Package mcp exposes the tools of Model Context Protocol servers as agentrun
// tools, through github.com/modelcontextprotocol/go-sdk. It imports tools
// for its Server and Tool types; package tools builds Sets of these tools
// from its configuration file (tools.Open), connecting through Source.
//
// A Client is one server: a local program spoken to over stdio (Command,
// Args, and Env) or a streamable HTTP endpoint (URL, Headers).
// Client.Tools lists the server's tools, following pagination, within
// Options.ConnectTimeout and at most MaxToolPages pages, MaxTools tools and
// MaxListBytes of names, descriptions and schemas: a list over a bound is a
// one-line error naming the server and the bound (ErrListBound). A tool
// whose name is not a tool name every provider takes (agent.ValidToolName:
// 1 to 64 letters, digits, '_' or '-', the rule for agent names) is left
// out with a warning naming the server and the name, quoted and cut; its
// name still counts towards MaxListBytes.
//
// What a server sees of the worker: a stdio server starts with a minimal
// environment, the Inherited variables (HOME, LOGNAME, PATH, SHELL, TERM,
// USER) that are set plus its Env, never the worker's provider keys,
// Temporal credentials or AGENTRUN_JOURNAL unless Env names them. An HTTP
// server gets Headers on requests to its URL's host only: a redirect to
// another host gets none. A stdio server's stderr, quoted in errors, is
// scrubbed of the worker's secret values (package plumbing/secret).
//
// A Tool's spec carries the server's name, description and input JSON
// schema. Its kind comes from its annotations: readOnlyHint true makes it a
// read; anything else, including a tool without annotations, is a write,
// and a write annotated idempotentHint true is Idempotent (an interrupted
// call is retried instead of becoming Indeterminate). Package tools may
// override all of these.
//
// A write declares that it takes an idempotency key by its input schema,
// by this convention: exactly one top-level property either carries the
// keyword "x-idempotency-key": true, or is named "idempotency_key" or
// "idempotencyKey" (with type string or no type). Its spec's
// IdempotencyKey names that argument: the engine fills it with a key of its
// own, the model never sees it, and an interrupted call runs again with
// the same key, for the server to deduplicate. Two such properties declare
// nothing; the tools file's "idempotency_key" overrides the convention
// ("" turns it off).
//
// Tool.Call guarantees:
//
//   - A result the server marks isError is a ToolResult with IsError and
//     the result's text; arguments that are not a JSON object are an
//     IsError result, and the server is not called.
//   - The content is rendered as text: text blocks as they are, every other
//     block as one line of JSON (resource links and embedded text resources
//     in full; images, audio and binary resources with their type, media
//     type and size, the data left out), joined with newlines; structured
//     content follows as JSON unless a text block already holds the same
//     JSON value (as the protocol asks servers to provide).
//   - A transport or protocol failure, a cancelled or expired context, and
//     a call after Close are Go errors. Whether the server acted on a call
//     that failed is unknown.
//   - A message from the server is at most MaxResultBytes (16 MiB), on
//     stdio (the SDK's frame cap) and on HTTP (each response body): a tool
//     result over it is an IsError result that says so and names the cap
//     (for a write, the server answered: it acted); the session is then
//     restarted by the next call, as after any end of a session.
//   - Nothing waits without a bound: a call (and Tools) returns when its
//     context ends, even while the request is stuck in a write to a stdio
//     server that stopped reading; a connect or restart is bounded by
//     Options.ConnectTimeout; Close ends the calls in flight (ErrClosed)
//     and a restart in progress, kills a stdio server that does not stop,
//     does not wait for a child of the server that holds its output open,
//     and returns within seconds (at worst about half a minute).
//   - When a session ends (a stdio server exits or is killed, an HTTP
//     server drops the session), the call in flight fails with an error
//     that names the reason (a stdio server's exit status and the end of
//     its stderr). The next call makes one attempt to start a new session
//     (a new process for stdio) before it runs; if the attempt fails, that
//     call fails naming why the old session ended and why the restart
//     failed, and the call after it tries again. A call is never repeated
//     by this package.
package mcp
