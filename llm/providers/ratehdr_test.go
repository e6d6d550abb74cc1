package providers

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentrun/agentrun/llm"
)

func TestParseLeft(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	oa := http.Header{}
	oa.Set("x-ratelimit-limit-requests", "60")
	oa.Set("x-ratelimit-remaining-requests", "0")
	oa.Set("x-ratelimit-reset-requests", "1m0s")
	oa.Set("x-ratelimit-limit-tokens", "40000")
	oa.Set("x-ratelimit-remaining-tokens", "39000")
	oa.Set("x-ratelimit-reset-tokens", "1.5s")
	l, ok := parseLeft(oa, now)
	if !ok || l.Requests != 0 || l.RequestLimit != 60 || l.RequestReset != time.Minute || l.Tokens != 39000 || l.TokenReset != 1500*time.Millisecond {
		t.Fatalf("openai: %+v %t", l, ok)
	}
	an := http.Header{}
	an.Set("anthropic-ratelimit-requests-limit", "50")
	an.Set("anthropic-ratelimit-requests-remaining", "20")
	an.Set("anthropic-ratelimit-requests-reset", now.Add(30*time.Second).Format(time.RFC3339))
	an.Set("anthropic-ratelimit-tokens-limit", "10000")
	an.Set("anthropic-ratelimit-tokens-remaining", "1000")
	an.Set("anthropic-ratelimit-tokens-reset", now.Add(54*time.Second).Format(time.RFC3339))
	l, ok = parseLeft(an, now)
	if !ok || l.Requests != 20 || l.TokenLimit != 10000 || l.TokenReset != 54*time.Second {
		t.Fatalf("anthropic: %+v %t", l, ok)
	}
	if _, ok := parseLeft(http.Header{"Content-Type": {"application/json"}}, now); ok {
		t.Fatal("no rate-limit headers read as some")
	}
	// Nonsense and hours are capped or dropped.
	bad := http.Header{}
	bad.Set("x-ratelimit-remaining-requests", "zero")
	bad.Set("x-ratelimit-reset-requests", "72h")
	if l, _ := parseLeft(bad, now); l.Requests != -1 || l.RequestReset != llm.MaxRetryAfter {
		t.Fatalf("bad headers: %+v", l)
	}
}
