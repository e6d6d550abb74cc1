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
// The programs' worker runs a default agent with the tools file's tools,
// and the file's agents (Agents): all are agentrun.Agents of its Config,
// run as a team's agents are, and none may be named at a run's start
// (NoStart): a run runs the default agent, and its calls start the
// others. What agentrun.Config does not offer a team for that (the
// executor's settings, the file's agent depth and tool order, the
// activities' names of older builds, the test-only workflow change) goes
// through package frontdoor.
package fromenv
