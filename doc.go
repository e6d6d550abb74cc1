// Package agentrun is the front door of agentrun for Go programs: durable
// LLM agent runs on Temporal, with tools written in Go.
//
// An agent run calls a model, the model asks for tools, the tools act on
// the world, and the loop goes on until an answer. agentrun runs that loop
// as a Temporal workflow in which every model call and tool call is an
// activity, so a run survives crashes and redeploys without paying for a
// model call twice or acting twice: a write whose outcome is unknown stops
// the run as Indeterminate until a person settles it.
//
// # Tools in Go
//
// [NewTool] makes a tool of a typed Go function: the schema the model sees
// comes from its input type, the arguments are checked before the function
// runs, and its errors follow one contract: an ordinary error is a failed
// result the model reads; [ErrOutcomeUnknown] (or a panic) in a write stops
// the run as Indeterminate.
//
// # Agents on your worker
//
// [Config] names the agents a worker runs ([Agent]: a model, a system
// prompt, tools, the agents it may call) and the folder (or stores) the
// write guard and the content live in; [Register] puts the agent-run
// workflow ([WorkflowName]) and its activities on your own worker, beside
// your workflows and activities: its activities are named "agentrun.…",
// so none collides with yours. A run names its agent when it starts; a run
// that names none runs the first. [EnsureSearchAttributes] creates the
// search attributes runs set, once per namespace.
//
// A client, a test kit and a child-workflow helper are being built; until
// then runs are started, approved and reconciled through the Temporal
// client and the reconcile program (docs/library.md).
package agentrun
