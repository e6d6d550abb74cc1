// Package providerfake is the tests' own model provider: an
// OpenAI-compatible and an Anthropic-compatible server in one
// http.Handler, with the limits and the prompt caches of a real account,
// for the tests and the bench that treat the provider as a shared, priced
// resource. cmd/providerfake serves it as a separate process
// (testenv.ProviderFake starts it from a test, testenv.LaunchProviderFake
// from a program); it prints "providerfake listening on http://HOST:PORT".
//
// # Endpoints
//
// POST /v1/chat/completions is OpenAI's Chat Completions (OpenAI's base
// URL is the root plus /v1), answered whole or, with "stream": true, as
// server-sent chunks ending in data: [DONE], the usage chunk last when
// stream_options.include_usage is set. POST /v1/messages is Anthropic's
// Messages (its base URL is the root), answered whole or as Anthropic's
// events (message_start ... message_stop). GET /stats answers Stats as
// JSON. The bodies are shaped like the recorded real answers in
// llm/providers/testdata; any key is accepted.
//
// # The model
//
// It is deterministic. With tools offered it calls the first one, with the
// arguments {"topic":"providerfake"} when that tool's schema has a string
// property topic and {} otherwise, until the conversation holds
// Config.Turns tool results (OpenAI's role "tool" messages, Anthropic's
// tool_result blocks); then, and whenever no tool is offered, it answers
// the text "I read N tool results.".
//
// # Tokens
//
// The fake's tokenizer is a token per 4 bytes, rounded up, of the prompt:
// the tools, then (Anthropic) the system blocks, then the messages (each
// of Anthropic's content blocks apart), each as compact JSON with its
// keys sorted and any cache_control marker removed. Output tokens are the
// same estimate of the reply's text, or of the called tool's name and
// arguments.
//
// # Limits
//
// One limit for the whole fake, all clients and both APIs together: a
// request is answered when fewer than Config.RPM requests and no more
// than Config.TPM minus its own tokens (input plus output, cached ones
// included) were answered within the sliding Window (one minute) before
// it. Otherwise it is answered 429 with Retry-After, the whole seconds
// until the oldest counted request whose leaving makes room leaves, and
// each provider's error body: OpenAI's {"error":{"message","type":
// "requests" or "tokens","code":"rate_limit_exceeded"}}, Anthropic's
// {"type":"error","error":{"type":"rate_limit_error","message"}}. A request
// larger than the whole token limit is refused without Retry-After, as
// OpenAI refuses a request too large. Refused and malformed requests (400,
// in each provider's shape) count nowhere.
//
// Every model response carries the provider's rate-limit headers, counted
// after the request: OpenAI's x-ratelimit-{limit,remaining,reset}-
// {requests,tokens} (reset as "12s", "1m0s"), Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
// {limit,remaining,reset} (reset as an RFC 3339 time; the three token
// limits are all Config.TPM). Reset is when the window is empty again:
// when its newest request leaves.
//
// # Prompt caches
//
// Each provider keeps its own cache, by model, of prompt prefixes at the
// boundaries of the pieces above, each kept Config.CacheTTL after its last
// use. OpenAI's rule: every prefix is remembered; the longest one seen
// before, if it has MinCacheTokens (1024) or more, is reported cached in
// usage.prompt_tokens_details.cached_tokens, rounded down to a multiple of
// 128 (OpenAI caches 1024 tokens and then 128-token steps). prompt_tokens
// is the whole prompt. Anthropic's rule: only prefixes ending at a piece
// the request marks with cache_control (a tool, a system block, a content
// block), of MinCacheTokens or more, are written. The longest one written
// before is cache_read_input_tokens; the tokens from there to the last
// breakpoint are written now, cache_creation_input_tokens (also
// cache_creation.ephemeral_5m_input_tokens); input_tokens is the rest, as
// Anthropic counts it (the whole prompt is the sum of the three). As
// Anthropic does, a breakpoint also finds a prefix written at any of the
// 20 boundaries before it, so one breakpoint that moves to the end of the
// conversation on every turn reads what the turn before wrote.
package providerfake
