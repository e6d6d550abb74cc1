// Package environ builds an agentrun.Config from the environment the
// agentrun programs read (docs/configuration.md): AGENTRUN_MODEL and
// AGENTRUN_MODELS for the model, AGENTRUN_TOOLS for the tools file (its
// MCP servers and agents), AGENTRUN_JOURNAL for the write guard's journal
// and the content (a folder or a PostgreSQL URL), and the rest. [Load]
// gives a worker of your own the agent the worker program runs, with the
// same code: the worker program registers the Config it builds the same
// way (agentrun.Register), adding only the activity names of older builds
// of its own.
//
// It links the model providers' and the MCP SDKs (packages llm/providers
// and tools/mcp), which package agentrun leaves out: import it only where
// the environment configures the agent.
package environ
