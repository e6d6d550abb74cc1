package llm

import (
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/llm/internal/safetext"

	"context"

	"github.com/agentrun/agentrun/agent"
)

// Provider answers model steps.
type Provider interface {
	// Name names the provider and model, e.g. "scripted" or
	// "openai:gpt-4o"; it appears in step summaries. It holds no secret.
	Name() string
	// Complete answers one model step.
	Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error)
}

// Streamer is a Provider that can deliver a reply's text while the model
// generates it.
type Streamer interface {
	Provider
	// Stream answers like Complete, and calls text with each piece of the
	// reply's text as it arrives, in order, from the calling goroutine.
	// The reply it returns is the same as Complete would return for the
	// same answer (text, tool calls, usage, finish reason, model), and its
	// errors have the same classes. The pieces delivered add up to the
	// reply's text when Stream succeeds; when it fails they were a part of
	// an answer that does not count (see the package documentation).
	// text may be nil.
	Stream(ctx context.Context, req agent.ModelRequest, text func(delta string)) (agent.ModelReply, error)
}

// ModelFormat lists the accepted values of AGENTRUN_MODEL, for errors.
const ModelFormat = `"scripted" (the built-in hand example), "scripted:PATH" (a JSON script), ` +
	`"openai:MODEL" (Chat Completions of OpenAI or, with OPENAI_BASE_URL, of a compatible server; key in OPENAI_API_KEY) ` +
	`or "anthropic:MODEL" (the Anthropic Messages API; key in ANTHROPIC_API_KEY)`

// DefaultContextBudget is the context budget, in estimated tokens, of the
// provider named by spec: 128000 for openai, 200000 for anthropic, 0 (no
// budget) for the scripted model.
func DefaultContextBudget(spec string) int {
	switch kind, _, _ := strings.Cut(spec, ":"); kind {
	case "openai":
		return 128_000
	case "anthropic":
		return 200_000
	}
	return 0
}

// Account holds a provider's account settings: its key, its address and
// the cap on a reply's tokens. They come from the environment, which only
// the programs' configuration reads (internal/config): OPENAI_API_KEY,
// OPENAI_BASE_URL, OPENAI_ORG_ID and OPENAI_PROJECT_ID for "openai:MODEL";
// ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL for "anthropic:MODEL";
// AGENTRUN_MAX_TOKENS for both. The zero Account is no key, the providers'
// own addresses and their default caps.
type Account struct {
	OpenAIAPIKey       string `json:"-"`
	OpenAIBaseURL      string
	OpenAIOrganization string
	OpenAIProject      string
	AnthropicAPIKey    string `json:"-"`
	AnthropicBaseURL   string
	// MaxTokens caps the tokens of a reply (AGENTRUN_MAX_TOKENS). Default
	// 0: not sent to OpenAI, DefaultMaxTokens for Anthropic.
	MaxTokens int64
}

// String describes the account without its keys.
func (a Account) String() string {
	return fmt.Sprintf("openai (base URL %q, key %s), anthropic (base URL %q, key %s), max tokens %d",
		safetext.RedactURL(a.OpenAIBaseURL), safetext.KeyState(a.OpenAIAPIKey), safetext.RedactURL(a.AnthropicBaseURL), safetext.KeyState(a.AnthropicAPIKey), a.MaxTokens)
}

// GoString is String: %#v must not print a key either.
func (a Account) GoString() string { return a.String() }
