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
// The rest of the front door (agents, registration on a worker, a client,
// a test kit) is being built; until then the programs in worker/, starter/
// and reconcile/ are the way to run agents (see the README).
package agentrun
