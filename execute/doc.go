// Package execute runs one step the agent loop names: a model step through
// an llm.Provider, a tool step through a tools.Set. Both engines (the local
// journal and the Temporal activities) use it, so a step means the same
// thing everywhere. It records nothing in a journal: recording is the
// engine's job.
//
// # Values by reference
//
// Bulky values live in a content.Store, written once by the step that
// produced them: a tool result, a reply's text or a tool call's arguments
// larger than agent.InlineLimit is put in the store and the step's result
// carries an agent.Ref (key, size, preview) instead. A final answer stays
// inline: it is the run's result.
//
// # Conversations
//
// A model step's input refers to the conversation (agent.Conversation): a
// chain of nodes in the store, newest first, followed by a few messages
// inline (at most TailLimit bytes of them). A node is the JSON
//
//	{"prev":"sha256:…","stored":N,"messages":[…]}
//
// holding the messages that follow the N messages of node prev, in their
// recorded form (large values as references). Node keys are content hashes,
// so a node never changes and putting it again is harmless. A model step
// appends its new messages and its reply to the inline tail, and puts the
// tail as a new node when it outgrows TailLimit: the bytes written per turn
// are the turn's own, never the conversation's prefix. Its reply records
// the conversation only when it made a new node (the new head, nothing
// inline); while the conversation stays inline the reply records none, and
// the loop appends the step's new messages and the reply to the input's
// tail itself (agent.Loop), so that a history does not hold each message
// twice more.
//
// To build a request the executor walks the chain back from the head to
// the newest node it has in its bounded cache (a warm worker reads only the
// node written since its last step; a cold one reads them all), resolves
// references, and applies the context budget: when the estimated tokens
// exceed it, the oldest tool results, never those answering the latest
// reply, are replaced by a marker naming their step and size. The count is
// recorded in the reply (Elided); the full conversation stays in the store.
//
// A reference whose content is missing or damaged is a *ContentError: the
// run cannot go on from a guess.
//
// # Retries
//
// Which failures of a step are worth another attempt, and how often and
// after what wait, is decided here for both engines (retry.go): Transient
// (a model step's retryable llm class, any read failure; never a write,
// never missing content) and StepRetry (10 attempts, 1 s doubling to 1 m).
// The Temporal workflow builds its activities' retry policy from these
// numbers; the local driver (local.Engine.Retry) follows StepRetry, with
// the attempts and first wait its settings give. Describe says a failure
// in plain words on one line, without secrets.
package execute
