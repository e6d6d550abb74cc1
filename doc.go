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
// the run as Indeterminate. A write declares how an interrupted call is
// settled without a person: an idempotency key the engine fills, or a
// [Probe] that asks the world. [ActivityTool] makes a tool of one of your
// Temporal activities instead: a call is scheduled as that activity, on
// its own task queue with its own options, under the same contract.
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
// search attributes runs set, once per namespace. An agent's approval rule
// (Agent.Approve) decides per call, from its typed arguments, whether the
// call waits for a person; its decision is recorded with the run.
//
// # Runs from Go
//
// [Client], over your own Temporal client, starts runs ([Client.Start],
// with an agent and budgets) and operates them ([Run]: Wait, State,
// Pending calls with their typed arguments, Approve, Deny, Done, Retry,
// Budget, Message, Cancel, Subscribe to its events), with typed errors ([ErrRunNotFound],
// [RefusedError], ...). [RunAgent] runs an agent from your own workflow,
// as a child workflow, and returns its [Result].
//
// # With no server
//
// [NewLocal] runs the same Config on the local engine, in this process,
// over journals in Config.Journal: [Local.Start] drives a run until it
// ends or waits for a person, and its [LocalRun] has the operator methods
// of a [Run], with the same types and errors ([Operator] is the interface
// both satisfy); [LocalRun.Resume] and [LocalRun.Wait] drive it on.
//
// Package agentruntest runs
// agents on the sdk's test environment, so an agent is tested with no
// server; docs/library.md is the tour, examples/refund the worked example.
package agentrun
