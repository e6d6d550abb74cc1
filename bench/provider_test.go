package main

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit/providerfake"
)

// TestProviderQuick runs the provider section alone, as -quick sizes it:
// each provider's run makes its 50 model steps, one request each (the
// section checks the steps and the answer, that the fake refused
// nothing, and that its log counts what its /stats does); the cache's
// share of the input meets the 0.80 for both providers; the
// recorded cost is within 1% of the invoice of the fake's own token
// counts, and is not 0.
func TestProviderQuick(t *testing.T) {
	p := paramsFor(true).prov
	rows, err := providerSection(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows %+v; want 6: cache share, cost and steps for each provider", len(rows), rows)
	}
	for i, kind := range []string{providerfake.Anthropic, providerfake.OpenAI} {
		share, cost, steps := rows[i], rows[2+i], rows[4+i]
		for _, r := range []row{share, cost, steps} {
			if !strings.HasPrefix(r.Figure, kind+": ") || r.Missing != "" {
				t.Errorf("%s: want a measured %s row", r.Figure, kind)
			}
		}
		if share.Floor != cacheShareGoal || !share.Met() || share.Measured <= 0 || share.Measured >= share.Baseline {
			t.Errorf("%s: cache read %v of %v input tokens (ratio %.3f); want a share at or above %.2f and below 1", share.Figure, share.Measured, share.Baseline, share.Ratio(), cacheShareGoal)
		}
		if cost.Floor != costFloor || cost.Goal != costCeiling || !cost.Met() || cost.Baseline <= 0 {
			t.Errorf("%s: cost $%v vs invoice $%v (ratio %.4f); want within 1%%", cost.Figure, cost.Measured, cost.Baseline, cost.Ratio())
		}
		if steps.Measured != float64(p.Steps) || steps.Baseline != float64(p.Steps) {
			t.Errorf("%s: %v steps, %v requests; want %d of each", steps.Figure, steps.Measured, steps.Baseline, p.Steps)
		}
	}
	// Anthropic writes its cache at the breakpoints; OpenAI writes none.
	if !strings.Contains(rows[1].Figure, "(0 written to the cache;") || strings.Contains(rows[0].Figure, "(0 written") {
		t.Errorf("written tokens: %q, %q; want some for anthropic, none for openai", rows[0].Figure, rows[1].Figure)
	}
	t.Logf("%+v", rows)

	t.Run("goal range", func(t *testing.T) {
		for _, tc := range []struct {
			measured float64
			met      bool
		}{{0.984, false}, {0.985, true}, {0.995, true}, {1.0, true}, {1.012, true}, {1.02, false}} {
			r := row{Figure: "f", Measured: tc.measured, Baseline: 1, Floor: costFloor, Goal: costCeiling}
			if r.Met() != tc.met || r.Missed() == tc.met {
				t.Errorf("ratio %v in 0.99 to 1.01 (to two decimals): met %t; want %t", tc.measured, r.Met(), tc.met)
			}
		}
		low := row{Figure: "share", Measured: 79, Baseline: 100, Floor: cacheShareGoal}
		if low.Met() || !low.Missed() || !strings.Contains(low.cells()[4], "≥ 0.80") || !strings.Contains(verdict([]row{low}), "goal ≥ 0.80") {
			t.Errorf("a share of 0.79 against ≥ 0.80: met %t, cell %q, verdict %q; want missed", low.Met(), low.cells()[4], verdict([]row{low}))
		}
		if c := (row{Measured: 1, Baseline: 1, Floor: costFloor, Goal: costCeiling}).cells()[4]; c != "0.99 to 1.01 ✓" {
			t.Errorf("range cell %q; want \"0.99 to 1.01 ✓\"", c)
		}
	})
}
