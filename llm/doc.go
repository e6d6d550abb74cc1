// Package llm holds the model providers behind one interface.
//
// A Provider answers one model step: the conversation so far and the tools
// on offer in, one assistant message (text or tool calls) out. Providers do
// not retry: the engine decides retries from the errors' classes (see
// Error). The scripted provider answers from a JSON script and needs no
// network; it drives the demo and the tests.
package llm
