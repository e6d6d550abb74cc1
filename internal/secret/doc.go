// Package secret keeps the worker's secret values out of the text that
// leaves it. Text from tools, MCP servers' stderr and model providers can
// reach errors, the run's history and logs; every place where it does
// passes it through Scrub (or Err), which replaces each secret value, raw
// or escaped as JSON, a URL query or a URL path would escape it, with
// "[redacted]".
//
// The secrets are the values of the worker's own credentials, taken from
// its environment at first use (FromEnviron: the provider keys, Temporal's
// API key and TLS key data, the password in AGENTRUN_JOURNAL, and any
// variable whose name says it holds a key, token, secret or password),
// and the values the tools file gives its servers (header values, and the
// environment values whose names say so), which package tools adds when it
// opens them. Values shorter than MinLen are not secrets: replacing them
// would mangle ordinary text.
//
// Scrubbing is a last line: the worker's first defence is not to hand its
// secrets out (MCP servers start with a minimal environment; headers are
// not sent to another host after a redirect).
package secret
