package agent

import (
	"math"
	"testing"
)

// TestPriceCost: the invoice of a usage by hand, the cache prices
// defaulting to the input's, and the cost budget.
func TestPriceCost(t *testing.T) {
	p := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := Usage{InputTokens: 10_000, OutputTokens: 2_000, CacheReadTokens: 6_000, CacheWriteTokens: 1_000}
	// 3,000 plain input at $3, 6,000 read at $0.30, 1,000 written at $3.75, 2,000 output at $15.
	want := (3_000*3 + 6_000*0.3 + 1_000*3.75 + 2_000*15) / 1e6
	if got := p.Cost(u); math.Abs(got-want) > 1e-15 {
		t.Fatalf("Cost = %v, want %v", got, want)
	}
	if got, want := (Price{Input: 2, Output: 8}).Cost(u), (10_000*2+2_000*8)/1e6; math.Abs(got-want) > 1e-15 {
		t.Fatalf("cache prices default to the input's: %v, want %v", got, want)
	}
	if got := FormatCost(0.01234); got != "$0.0123" {
		t.Fatalf("FormatCost = %q", got)
	}
	b := Budget{MaxCost: 0.5}
	if why := b.Exceeded(1, Usage{Cost: 0.49}); why != "" {
		t.Fatalf("under the limit: %q", why)
	}
	if why := b.Exceeded(1, Usage{Cost: 0.5}); why != "the run cost $0.5000; its limit is $0.5000" {
		t.Fatalf("at the limit: %q", why)
	}
	if left, why := b.Left(1, Usage{Cost: 0.2}); why != "" || math.Abs(left.MaxCost-0.3) > 1e-15 {
		t.Fatalf("Left: %+v, %q", left, why)
	}
	if u := (Usage{Cost: 0.1}).Add(Usage{Cost: 0.2, CacheReadTokens: 5}); math.Abs(u.Cost-0.3) > 1e-15 || u.CacheReadTokens != 5 {
		t.Fatalf("Add: %+v", u)
	}
}
