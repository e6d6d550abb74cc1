package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestFleetLimitQuick runs the fleet limit section alone, as -quick sizes
// it: with the limit shared, the fake refuses at most 1% of the requests,
// the fleet's answered requests over the steady middle reach 0.85 of the
// limit and stay under it, and every run completes; each worker alone
// makes every run's calls too, but the fake refuses some (four limiters
// each at the whole limit).
func TestFleetLimitQuick(t *testing.T) {
	env := sectionEnv(t)
	bin, err := buildWorker(t.Context(), env.subdir("bin"))
	if err != nil {
		t.Fatal(err)
	}
	p := paramsFor(true).fleetLim
	rows, err := fleetLimit(t.Context(), env, bin, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 {
		t.Fatalf("%d rows %+v; want 10: 429s, requests and tokens a minute, failed and completed runs for each side", len(rows), rows)
	}
	for i, r := range rows {
		t.Logf("%s: %.2f vs %.2f (%.3f)", r.Figure, r.Measured, r.Baseline, r.Ratio())
		side := "shared limit"
		if i >= 5 {
			side = "each worker alone"
		}
		if !strings.HasPrefix(r.Figure, side+" ") || r.Missing != "" {
			t.Errorf("row %d %q: want a measured %s row", i, r.Figure, side)
		}
	}
	refused, rate, failed, completed := rows[0], rows[1], rows[3], rows[4]
	for _, r := range []row{refused, failed, completed} {
		if !r.Met() {
			t.Errorf("%s: %.2f vs %.2f (ratio %.3f), goal %s missed", r.Figure, r.Measured, r.Baseline, r.Ratio(), r.goalText())
		}
	}
	// The quick run's steady middle lasts about 10 s, beside the other
	// packages' tests: it must reach 0.85 of the limit; the full run's goal
	// is 0.9.
	if rate.Ratio() < 0.85 {
		t.Errorf("%s: %.1f a minute, under 0.85 of the limit %.0f", rate.Figure, rate.Measured, rate.Baseline)
	}
	if rate.Ratio() > 1.02 {
		t.Errorf("%s: %.1f a minute, over the limit %.0f", rate.Figure, rate.Measured, rate.Baseline)
	}
	if want := fmt.Sprintf("(%d answered)", p.Runs*p.Turns); !strings.Contains(refused.Figure, want) {
		t.Errorf("%s: want %s, %d runs of %d calls", refused.Figure, want, p.Runs, p.Turns)
	}
	alone := rows[5:]
	if alone[4].Measured != float64(p.Runs) || alone[3].Measured != 0 {
		t.Errorf("each worker alone: %v completed, %v failed; want %d and 0 (a 429 is no failed attempt)", alone[4].Measured, alone[3].Measured, p.Runs)
	}
	if alone[0].Measured == 0 {
		t.Errorf("each worker alone: no 429, so the baseline does not show what sharing the limit prevents")
	}
	for _, r := range alone {
		if r.hasGoal() {
			t.Errorf("%s: a baseline row with a goal", r.Figure)
		}
	}
}
