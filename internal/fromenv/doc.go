// Package fromenv turns the programs' environment (internal/config's
// parsed settings: AGENTRUN_MODEL, AGENTRUN_MODELS, AGENTRUN_TOOLS,
// AGENTRUN_JOURNAL, ...) into what package agentrun runs: an executor
// (Executor, which the local engine runs too) and a worker's
// agentrun.Config (Worker), which the worker program registers with
// agentrun.Register, the one registration path of the library and the
// programs.
//
// It builds the model providers (llm/providers, with the rate limiter
// when a model declares limits) and connects to the tools file's MCP
// servers (tools/mcp), so it links the provider and MCP SDKs that package
// agentrun leaves out. It opens the stores AGENTRUN_JOURNAL names
// (stores.go): a folder, or a PostgreSQL database through one pool per
// database and process, sealed with the codec when one is set. What is a
// process's concern, and not the configuration's, stays with the caller
// (internal/cli): the metrics endpoint, the tracing exporter, dialing
// Temporal and the worker's options.
//
// The programs' worker runs one agent, with the tools file's tools and
// agents; those agents are agent tools that a run's calls start, never a
// client at a run's start. What agentrun.Config does not offer a team for
// that (the tools file's set, its agents' models, the executor's settings,
// the activities' names of older builds, the test-only workflow change)
// goes through package frontdoor.
package fromenv
