// Package providers holds the HTTP model providers, OpenAI's Chat
// Completions (and the servers compatible with it) and Anthropic's
// Messages API, through their official SDKs, and New, which builds the
// provider a model spec names ("scripted", "scripted:PATH",
// "openai:MODEL", "anthropic:MODEL"; llm.ModelFormat).
//
// It is apart from package llm so that a worker links these SDKs only
// when it builds these providers: the workflow, the activities and the
// engine take an llm.Provider. Their timeouts, streams, errors and prompt
// caching follow the rules in package llm's documentation.
package providers
