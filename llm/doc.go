// Package llm holds the model interface and what every provider shares:
// the errors' classes, the models file's settings, the rate limits
// (Limited), the prices (Priced) and the scripted model. It links no
// provider's SDK: the OpenAI and Anthropic providers, and New, which
// builds a provider from a model spec such as "openai:gpt-4o", are in
// package llm/providers, which only the programs (and a library user who
// calls those models) import.
//
// A Provider answers one model step: the conversation so far and the tools
// on offer in, one assistant message (text or tool calls) out. Providers do
// not retry: the engine decides retries from the errors' classes (see
// Error). The scripted provider answers from a JSON script and needs no
// network; it drives the demo and the tests.
//
// The packages read no environment variable: providers.New builds a
// provider from the options it is given, its key and address in
// Options.Account, which the programs' configuration (internal/config)
// reads; providers.Check tells whether New would refuse them, but for a
// missing key. The rules below for timeouts, streams and caching are those
// of the HTTP providers of llm/providers.
//
// Every HTTP request runs under a request timeout (Options.Timeout,
// AGENTRUN_MODEL_TIMEOUT, DefaultTimeout 2m by default) that covers sending
// the request and reading the whole answer: a server that accepts a
// request and never answers is abandoned then with a ClassTimeout error,
// which is retryable. A streamed answer has a second bound, the idle
// timeout (Options.IdleTimeout, AGENTRUN_MODEL_IDLE_TIMEOUT,
// DefaultIdleTimeout 1m by default, never more than the request timeout):
// the longest wait for its first piece and between two pieces. A stream
// that keeps producing is cut only by the request timeout, its cap; one
// that stalls is cut by the idle timeout. Either cut is a ClassTimeout
// error whose message names the timeout that cut it (idle or whole
// answer) and its setting. The caller's own cancellation is told apart
// and comes back as it is.
//
// # Streaming
//
// A Provider may also be a Streamer (the scripted model and both HTTP
// providers are): Stream answers a
// model step like Complete, with the same request, the same reply and
// errors of the same classes, and meanwhile passes the reply's text to a
// callback piece by piece as the model generates it, in order, on the
// calling goroutine. The pieces of a Stream that succeeds add up to the
// reply's text (an OpenAI refusal comes whole at the end). The rules of a
// stream:
//
//   - An error status before the stream starts is the error Complete
//     returns for it (same class, status and Retry-After).
//   - A compatible server that ignores the request to stream and answers
//     whole (any content type but text/event-stream) gives the reply
//     Complete gives, its text in one piece.
//   - An error inside the stream (an OpenAI-compatible chunk holding an
//     "error" object; Anthropic's `event: error`, e.g. overloaded_error or
//     api_error) has the class of the HTTP error of its kind: rate limits
//     ClassRateLimit, overloaded and server errors ClassServer, a bad
//     request ClassBadRequest or ClassContextLength, and so on; an error of
//     no known kind is ClassServer. It has no status.
//   - Only a whole answer counts: a stream that ends before its last event
//     ([DONE] for OpenAI, message_stop for Anthropic), because the
//     connection closed or dropped, is a ClassNetwork error.
//   - Whenever Stream fails, the text already passed to the callback
//     belongs to no reply: Stream returns the error and the zero reply,
//     and whoever showed that text must treat it as abandoned (a retry
//     streams its answer anew).
//   - The request timeout bounds the whole stream, from sending the request
//     to the last event; the idle timeout bounds each wait for an event
//     (any event that carries part of the answer: text, tool-call
//     arguments, the finish reason, the usage; not Anthropic's ping). A
//     stream that stalls is abandoned after the idle timeout, one that
//     goes on too long after the request timeout, each with a
//     ClassTimeout error. A server that ignores the request to stream has
//     the request timeout alone once its answer's headers arrived.
//
// The scripted provider's Stream passes its text in pieces of three words
// and spreads the script's delay over them.
//
// Model settings (agent.ModelSettings: temperature, top_p, seed,
// max_tokens, reasoning_effort and provider-specific extra fields) come
// from the models file (LoadModels, AGENTRUN_MODELS), are checked per
// provider (CheckSettings) and go through the official SDKs: their
// parameter fields, and SetExtraFields for extra fields and for what an
// SDK has no field for. Every reply records the settings the request was
// sent with (ModelReply.Settings), so a person sees what the model was
// asked with; the scripted provider records them and sends nothing.
//
// # Prompt caching
//
// Both providers cache a prompt's prefix. A reply's usage counts every
// input token in InputTokens and, as parts of it, those the provider read
// from its cache (CacheReadTokens: OpenAI's cached_tokens, Anthropic's
// cache_read_input_tokens) and wrote to it (CacheWriteTokens: Anthropic's
// cache_creation_input_tokens; OpenAI reports none). OpenAI caches on its
// own. Anthropic caches at the breakpoints a request marks, and the
// Anthropic provider marks them (cache_control ephemeral, at most the four
// the API allows): the last tool, the last system block, the last block of
// the newest message, and the last block of the message before the newest
// assistant one, where the previous request's last breakpoint was; so each
// model step reads the steps before from the cache and writes what it
// adds. A request's prefix is the same bytes from step to step: the tools
// in their order (a schema's fields in the order of their names), the
// system prompt, then the conversation as recorded. What the context
// budget leaves out (execute's fit replaces old tool results by a marker)
// changes the prefix from the first result it replaces, and the cache is
// read only up to there.
package llm
