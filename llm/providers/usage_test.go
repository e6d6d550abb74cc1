package providers

import (
	"github.com/agentrun/agentrun/llm"

	"errors"
	"strings"
	"testing"
)

// TestNegativeUsageRefused: a provider's answer with a negative token count
// (which would lower the run's usage and lift its token budget) is refused
// by both adapters with one line, as a retryable llm.ClassServer error.
func TestNegativeUsageRefused(t *testing.T) {
	t.Parallel()
	openaiBody := `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-500,"completion_tokens":3,"total_tokens":-497}}`
	anthropicBody := `{"id":"m1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":-7}}`
	for _, tc := range []struct {
		name string
		call func(*testing.T) error
		n    string
	}{
		{"openai", func(t *testing.T) error {
			p := newTestOpenAI(t, newFake(t, answer(200, openaiBody)), OpenAIConfig{APIKey: testKey})
			_, err := p.Complete(t.Context(), userOnly)
			return err
		}, "-500"},
		{"anthropic", func(t *testing.T) error {
			p := newTestAnthropic(t, newFake(t, answer(200, anthropicBody)), AnthropicConfig{})
			_, err := p.Complete(t.Context(), userOnly)
			return err
		}, "-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.call(t)
			var e *llm.Error
			if !errors.As(err, &e) || e.Class != llm.ClassServer || !strings.Contains(e.Message, "negative token count ("+tc.n+"); want counts of 0 or more") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v; want a one-line llm.ClassServer error naming %s", err, tc.n)
			}
		})
	}
}
