package cli

import (
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestUsageShowsTheCache: the budget line and the usage notes name the
// prompt cache's tokens when the provider reported some, and read as before
// when it reported none.
func TestUsageShowsTheCache(t *testing.T) {
	t.Parallel()
	b := agent.Budget{MaxTurns: 10, MaxTokens: 50000}
	for _, tc := range []struct {
		u          agent.Usage
		line, note string
	}{
		{agent.Usage{InputTokens: 1200, OutputTokens: 50},
			"budget: 2 of 10 model calls; 1250 tokens (1200 input, 50 output), limit 50000", ""},
		{agent.Usage{InputTokens: 1200, OutputTokens: 50, CacheReadTokens: 800},
			"budget: 2 of 10 model calls; 1250 tokens (1200 input, 50 output; 800 read from the cache), limit 50000", " (800 read from the cache)"},
		{agent.Usage{InputTokens: 1200, OutputTokens: 50, CacheReadTokens: 800, CacheWriteTokens: 300},
			"budget: 2 of 10 model calls; 1250 tokens (1200 input, 50 output; 800 read from the cache, 300 written to it), limit 50000", " (800 read from the cache, 300 written to it)"},
		{agent.Usage{InputTokens: 1200, OutputTokens: 50, CacheWriteTokens: 1100},
			"budget: 2 of 10 model calls; 1250 tokens (1200 input, 50 output; 1100 written to the cache), limit 50000", " (1100 written to the cache)"},
	} {
		if got := budgetLine(2, tc.u, b); got != tc.line {
			t.Errorf("budgetLine(%+v)\n %q, want\n %q", tc.u, got, tc.line)
		}
		if got := cachedNote(tc.u); got != tc.note {
			t.Errorf("cachedNote(%+v) %q, want %q", tc.u, got, tc.note)
		}
	}
}
