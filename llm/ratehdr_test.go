package llm

import (
	"testing"
	"time"
)

// TestLeftSpent: the wait a pool takes when the headers say a limit is
// used up is the share of the reset that brings one more call's worth back.
func TestLeftSpent(t *testing.T) {
	t.Parallel()
	// No request left: one request's worth of the reset, a sixtieth.
	oa := Left{Requests: 0, RequestLimit: 60, RequestReset: time.Minute, Tokens: 39000, TokenLimit: 40000, TokenReset: 1500 * time.Millisecond}
	if d := oa.spent(1000); d != time.Second {
		t.Fatalf("openai spent %v, want 1s", d)
	}
	// 1000 tokens left, 2800 needed: 1800 of the 9000 that the reset brings back.
	an := Left{Requests: 20, RequestLimit: 50, RequestReset: 30 * time.Second, Tokens: 1000, TokenLimit: 10000, TokenReset: 54 * time.Second}
	if d := an.spent(2800); d != 54*time.Second*1800/9000 {
		t.Fatalf("anthropic spent %v, want %v", d, 54*time.Second*1800/9000)
	}
	if d := an.spent(500); d != 0 {
		t.Fatalf("enough left: spent %v", d)
	}
}
