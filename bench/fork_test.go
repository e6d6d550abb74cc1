package main

import (
	"strings"
	"testing"
	"time"
)

// TestForkQuick runs the fork section alone, as -quick sizes it: every
// fork answers its turn's answer after exactly one model call on its
// agent (the section checks), both fork points are timed, the ratio row
// carries the goal, and a first live step comes within the 2 s issue 47
// allows a fork of a long run.
func TestForkQuick(t *testing.T) {
	p := paramsFor(true).fork
	rows, err := forkTimes(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Goal != forkGoal || !strings.HasPrefix(rows[0].Figure, "ms from Client.Fork to the first live step, fork at turn 90 vs at turn 10 (median") {
		t.Fatalf("rows %+v; want 3, the first the median at turn %d vs %d with the %.1f goal", rows, p.Far, p.Near, forkGoal)
	}
	for _, r := range rows[:2] {
		if r.Measured <= 0 || r.Baseline <= 0 || r.Missing != "" {
			t.Errorf("%s: measured %v, baseline %v; want both measured", r.Figure, r.Measured, r.Baseline)
		}
		if limit := ms(2 * time.Second); r.Measured > limit || r.Baseline > limit {
			t.Errorf("%s: %.0f ms and %.0f ms; want each within %.0f ms", r.Figure, r.Measured, r.Baseline, limit)
		}
	}
	if e := rows[2]; e.Measured < 1 || e.Baseline != 1 {
		t.Errorf("origin executions %v vs %v; want at least 1 vs 1", e.Measured, e.Baseline)
	}
	t.Logf("%+v", rows)
}
