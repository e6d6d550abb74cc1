package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit"
)

// TestTokenLatencyQuick runs the token latency section alone, as -quick
// sizes it: both subscribers read every streamed answer whole (the
// section checks), and the rows are the first piece's p50 and any piece's
// p99 against their goals (150 ms, 1.2 s; judged by the bench, not here:
// the machine may be loaded), the p50s, the history ratio (goal 1.5) and the
// watched runs' history, each measured and sane.
func TestTokenLatencyQuick(t *testing.T) {
	rows, err := tokenLatency(t.Context(), sectionEnv(t), paramsFor(true).tokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8: %+v", len(rows), rows)
	}
	if _, _, missing := tsClient(); missing != "" {
		testkit.Unavailable(t, "the TypeScript streams client", errors.New(missing))
	}
	goals := []float64{1, 1, 1, 1, 0, 0, 1.5, 0}
	for i, r := range rows {
		t.Logf("%s: %.1f vs %.1f (%.2fx)", r.Figure, r.Measured, r.Baseline, r.Ratio())
		if r.Goal != goals[i] {
			t.Errorf("%s: goal %v, want %v", r.Figure, r.Goal, goals[i])
		}
		if r.Missing != "" || r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v vs %v (%s); want both measured", r.Figure, r.Measured, r.Baseline, r.Missing)
		}
	}
	// A piece reaches a subscriber after the model emitted it, and well
	// within the run (3 s of writing); its history is longer streamed.
	for _, r := range rows[:6] {
		if r.Measured > 10_000 {
			t.Errorf("%s: %.0f ms, more than the whole run", r.Figure, r.Measured)
		}
	}
	if h := rows[6]; h.Ratio() <= 1 || h.Ratio() > 5 {
		t.Errorf("history streamed vs unstreamed %.2f; want within 1–5", h.Ratio())
	}
	if w, h := rows[7], rows[6]; w.Measured <= h.Measured || w.Baseline != h.Baseline {
		t.Errorf("watched history %.0f B vs %.0f B, unwatched %.0f B vs %.0f B; want more watched, against the same baseline", w.Measured, w.Baseline, h.Measured, h.Baseline)
	}
	if !strings.Contains(rows[0].Section, "2×2 streamed answers") {
		t.Errorf("section %q does not name the quick sizes", rows[0].Section)
	}
}

// TestStreamedTurnsQuick runs the streamed turns section alone, as -quick
// sizes it: the streamed session's history is longer than the unstreamed
// one's, by more than the text and less than five times it, and its
// publish signals are batched (the goal 1.5 against 1 + the model's time
// over the interval).
func TestStreamedTurnsQuick(t *testing.T) {
	rows, err := streamedTurns(t.Context(), sectionEnv(t), paramsFor(true).stream)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[5].Goal != 1.5 {
		t.Fatalf("rows %+v; want 6, the last with the 1.5 goal", rows)
	}
	for _, r := range rows {
		t.Logf("%s: %.1f vs %.1f (%.2fx)", r.Figure, r.Measured, r.Baseline, r.Ratio())
		if r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v vs %v; want both measured", r.Figure, r.Measured, r.Baseline)
		}
	}
	if q := rows[0].Ratio(); q <= 1 || q > 5 {
		t.Errorf("history per turn streamed vs unstreamed %.2f; want within 1–5", q)
	}
	if q := rows[1].Ratio(); q < 1 || q > 5 {
		t.Errorf("extra history per streamed turn vs the text %.2f; want within 1–5", q)
	}
}
