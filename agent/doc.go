// Package agent is the engine-free core of agentrun: messages, tool calls and
// results, step names and kinds, the tool specs a model sees, the policy gate,
// and the agent loop.
//
// The loop (Loop.Next) is a pure function of recorded facts: given the input
// messages and what is known about each step (results, approvals, denials,
// steps whose outcome is unknown), it names the next step to execute or
// returns an Outcome. It never does I/O, reads no clock, draws no random
// number and never iterates a map, so an engine can re-run it from the start
// after every new fact and get the same answer: a completed step comes back
// from the record, and no model or tool is called twice for one step.
//
// Engines (the local engine in package local, over a journal; the Temporal
// workflow in package workflows) execute the steps the loop names and record their
// results as facts.
//
// A recorded model reply also says how the answer ended and what the
// model was asked with (ModelSettings). A final answer whose finish reason
// is length is cut off (ModelReply.CutOff): the loop completes with
// Outcome.CutOff set, or fails the run when Loop.FailOnCut is set. A
// final answer with no text (ModelReply.Empty) is flagged alike:
// Outcome.Empty, or a failed run when Loop.FailOnEmpty is set. Both
// engines read these from the record, so they agree.
package agent
