// Package llm holds the model providers behind one interface.
//
// A Provider answers one model step: the conversation so far and the tools
// on offer in, one assistant message (text or tool calls) out. Providers do
// not retry: the engine decides retries from the errors' classes (see
// Error). The scripted provider answers from a JSON script and needs no
// network; it drives the demo and the tests.
//
// Every HTTP request runs under a request timeout (Options.Timeout,
// AGENTRUN_MODEL_TIMEOUT, DefaultTimeout 2m by default) that covers sending
// the request and reading the whole answer: a server that accepts a
// request and never answers is abandoned then with a ClassTimeout error,
// which is retryable. The caller's own cancellation is told apart and
// comes back as it is.
//
// Model settings (agent.ModelSettings: temperature, top_p, seed,
// max_tokens, reasoning_effort and provider-specific extra fields) come
// from the models file (LoadModels, AGENTRUN_MODELS), are checked per
// provider (CheckSettings) and go through the official SDKs: their
// parameter fields, and SetExtraFields for extra fields and for what an
// SDK has no field for. Every reply records the settings the request was
// sent with (ModelReply.Settings), so a person sees what the model was
// asked with; the scripted provider records them and sends nothing.
package llm
