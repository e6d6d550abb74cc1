package llm

import (
	"cmp"
	"context"
	"fmt"
	"strings"

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
		redactURL(a.OpenAIBaseURL), keyState(a.OpenAIAPIKey), redactURL(a.AnthropicBaseURL), keyState(a.AnthropicAPIKey), a.MaxTokens)
}

// GoString is String: %#v must not print a key either.
func (a Account) GoString() string { return a.String() }

// New builds the provider named by spec, the value of AGENTRUN_MODEL, with
// the options o: for "openai:MODEL" and "anthropic:MODEL" the account
// settings in o.Account. The options' settings are checked for the
// provider; the scripted model records them in its replies and sends
// nothing. It reads no environment variable.
// With a price in o.Settings, every reply's usage carries its cost; with
// limits and o.Limiter, every call waits for its slot (Limited).
func New(spec string, o Options) (Provider, error) {
	p, err := newProvider(spec, o)
	if err != nil {
		return nil, err
	}
	if o.Settings.Price != nil {
		p = Priced(p, *o.Settings.Price)
	}
	if o.Settings.Limits != nil && o.Limiter != nil {
		p = Limited(p, o.Limiter, *o.Settings.Limits, o)
	}
	return p, nil
}

func newProvider(spec string, o Options) (Provider, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "", "scripted":
		if err := CheckSettings("scripted", o.Settings); err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		s := HandExample()
		if arg != "" {
			var err error
			if s, err = LoadScript(arg); err != nil {
				return nil, err
			}
		}
		p := NewScripted(s)
		p.settings = o.Settings
		return p, nil
	case "openai", "anthropic":
		model := strings.TrimSpace(arg)
		if model == "" {
			return nil, fmt.Errorf("model %q names no model after %q: want %s", spec, kind+":", ModelFormat)
		}
		a := o.Account
		if kind == "openai" {
			p, err := NewOpenAI(OpenAIConfig{
				Model:        model,
				APIKey:       a.OpenAIAPIKey,
				BaseURL:      a.OpenAIBaseURL,
				Organization: a.OpenAIOrganization,
				Project:      a.OpenAIProject,
				MaxTokens:    a.MaxTokens,
				Timeout:      o.Timeout,
				IdleTimeout:  o.IdleTimeout,
				Settings:     o.Settings,
			})
			if err != nil {
				return nil, err
			}
			return p, nil
		}
		p, err := NewAnthropic(AnthropicConfig{
			Model:       model,
			APIKey:      a.AnthropicAPIKey,
			BaseURL:     a.AnthropicBaseURL,
			MaxTokens:   a.MaxTokens,
			Timeout:     o.Timeout,
			IdleTimeout: o.IdleTimeout,
			Settings:    o.Settings,
		})
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown model %q: want %s", spec, ModelFormat)
}

// Check reports what New would refuse in spec and o, except a missing key:
// programs that never call the model (reconcile, a starter of a Temporal
// run) check their settings without the key, which lives in the workers'
// environment only; New refuses a missing key when a program builds the
// model. It reads the script of "scripted:PATH".
func Check(spec string, o Options) error {
	o.Account.OpenAIAPIKey = cmp.Or(o.Account.OpenAIAPIKey, "unchecked")
	o.Account.AnthropicAPIKey = cmp.Or(o.Account.AnthropicAPIKey, "unchecked")
	_, err := New(spec, o)
	return err
}
