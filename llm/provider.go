package llm

import (
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

// ModelFormat lists the accepted values of AGENTRUN_MODEL, for errors.
const ModelFormat = `"scripted" (the built-in hand example) or "scripted:PATH" (a JSON script)`

// New builds the provider named by spec, the value of AGENTRUN_MODEL.
func New(spec string) (Provider, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case "", "scripted":
		if arg == "" {
			return NewScripted(HandExample()), nil
		}
		s, err := LoadScript(arg)
		if err != nil {
			return nil, err
		}
		return NewScripted(s), nil
	}
	return nil, fmt.Errorf("unknown model %q: want %s", spec, ModelFormat)
}
