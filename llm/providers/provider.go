package providers

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/llm"
)

// New builds the provider named by spec, the value of AGENTRUN_MODEL, with
// the options o: for "openai:MODEL" and "anthropic:MODEL" the account
// settings in o.Account. The options' settings are checked for the
// provider; the scripted model records them in its replies and sends
// nothing. It reads no environment variable.
// With a price in o.Settings, every reply's usage carries its cost; with
// limits and o.Limiter, every call waits for its slot (llm.Limited).
func New(spec string, o llm.Options) (llm.Provider, error) {
	p, err := newProvider(spec, o)
	if err != nil {
		return nil, err
	}
	return llm.Wrap(p, o), nil
}

func newProvider(spec string, o llm.Options) (llm.Provider, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "", "scripted":
		p, err := llm.NewScriptedSpec(spec, o.Settings)
		if err != nil {
			return nil, err // not a nil *Scripted in a Provider
		}
		return p, nil
	case "openai", "anthropic":
		model := strings.TrimSpace(arg)
		if model == "" {
			return nil, fmt.Errorf("model %q names no model after %q: want %s", spec, kind+":", llm.ModelFormat)
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
	return nil, fmt.Errorf("unknown model %q: want %s", spec, llm.ModelFormat)
}

// Check reports what New would refuse in spec and o, except a missing key:
// programs that never call the model (reconcile, a starter of a Temporal
// run) check their settings without the key, which lives in the workers'
// environment only; New refuses a missing key when a program builds the
// model. It reads the script of "scripted:PATH".
func Check(spec string, o llm.Options) error {
	o.Account.OpenAIAPIKey = cmp.Or(o.Account.OpenAIAPIKey, "unchecked")
	o.Account.AnthropicAPIKey = cmp.Or(o.Account.AnthropicAPIKey, "unchecked")
	_, err := New(spec, o)
	return err
}
