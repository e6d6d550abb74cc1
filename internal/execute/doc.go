// Package execute runs one step the agent loop names: a model step through
// an llm.Provider, a tool step through a tools.Set. Both engines (the local
// journal and the Temporal activities) use it, so a step means the same
// thing everywhere. It records nothing: recording is the engine's job.
package execute
