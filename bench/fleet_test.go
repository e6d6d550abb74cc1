package main

import (
	"strings"
	"testing"
	"time"
)

// checkFleetRows fails t unless rows are want rows, the first timed of
// them measured on both sides (non-zero) with every ratio within lo–hi
// (sane on a loaded machine, not good), and the ones with a goal with
// that goal.
func checkFleetRows(t *testing.T, rows []row, want, timed int, goals map[int]float64, lo, hi float64) {
	t.Helper()
	if len(rows) != want {
		t.Fatalf("%d rows, want %d: %+v", len(rows), want, rows)
	}
	for i, r := range rows {
		t.Logf("%s: %.3f vs %.3f (%.2fx)", r.Figure, r.Measured, r.Baseline, r.Ratio())
		if g := goals[i]; r.Goal != g {
			t.Errorf("%s: goal %v, want %v", r.Figure, r.Goal, g)
		}
		if i >= timed {
			continue
		}
		if r.Missing != "" || r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v (%s); want both measured", r.Figure, r.Measured, r.Baseline, r.Missing)
		}
		if q := r.Ratio(); !(q >= lo && q <= hi) {
			t.Errorf("%s: ratio %.2f (%v vs %v), not within %v–%v", r.Figure, q, r.Measured, r.Baseline, lo, hi)
		}
	}
}

// TestSaturationQuick runs the saturation section alone, as -quick sizes
// it: every AgentRun run answers after its turns (the section checks),
// and the wall time, throughput, CPU per activity and latencies are
// measured on both sides, with the 1.15 and 1.25 goals; so are the same
// sides with gRPC compression off, this process's CPU and the dev
// server's (a child of the test, found by its port). Two rounds, each on
// a server of its own, where -quick runs one.
func TestSaturationQuick(t *testing.T) {
	p := paramsFor(true).satur
	p.Rounds = 2
	rows, err := saturation(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFleetRows(t, rows, 13, 13, map[int]float64{0: 1.15, 2: 1.25}, 0.2, 5)
	for i, prefix := range map[int]string{7: "s wall time, gRPC compression off on both sides", 9: "AgentRun's worker CPU ms per activity, gzip", 11: "dev server CPU ms per activity of AgentRun's runs, gzip vs compression off"} {
		if !strings.HasPrefix(rows[i].Figure, prefix) {
			t.Errorf("row %d is %q, want %q...", i, rows[i].Figure, prefix)
		}
	}
	if !strings.Contains(rows[0].Section, "20 AgentRun runs (T=3") || !strings.Contains(rows[0].Section, "2 rounds alternating, each on a dev server of its own") {
		t.Errorf("section %q does not name the quick sizes", rows[0].Section)
	}
}

// TestApprovalBatchQuick runs the approval under load section alone, as
// -quick sizes it: every parked run on both sides is woken by its side's
// one batch signal (digest-less approve payloads are accepted, else the
// hand-example runs would not complete with their request filed), and the figures
// are measured on both sides, the first with the 1.2 goal.
func TestApprovalBatchQuick(t *testing.T) {
	rows, err := approvalBatch(t.Context(), sectionEnv(t), paramsFor(true).batch)
	if err != nil {
		t.Fatal(err)
	}
	// The batch's own spread and the memory rows of 20 runs are within the
	// batcher's and the collector's noise: present, not judged.
	checkFleetRows(t, rows, 20, 3, map[int]float64{0: 1.2}, 0.2, 5)
	// The CPU each side cost the dev server is measured (its pid found by
	// its port), and so is the third side's, the bare workflows that
	// upsert as an approved run does.
	cpu := 0
	for _, r := range rows {
		if strings.Contains(r.Figure, "dev server's CPU per approved run") {
			cpu++
			if r.Measured <= 0 || r.Baseline <= 0 {
				t.Errorf("%s: %v vs %v; want both measured", r.Figure, r.Measured, r.Baseline)
			}
		}
	}
	if cpu != 2 {
		t.Errorf("%d rows of the dev server's CPU, want 2 (AgentRun vs bare, upserting vs bare)", cpu)
	}
	t.Log(rows[0].Section)
}

// TestParkedFleetQuick runs the same section as the bench's fleet-scale
// call, as -quick sizes it (10 runs): it adds the RSS budget row, against
// 500 MiB with the goal 1.
func TestParkedFleetQuick(t *testing.T) {
	p := paramsFor(true).fleet
	rows, err := approvalBatch(t.Context(), sectionEnv(t), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFleetRows(t, rows, 17, 3, map[int]float64{0: 1.2, 16: 1}, 0.2, 5)
	if r := rows[16]; r.Baseline != 500 || r.Missing != "" {
		t.Errorf("budget row %+v; want against 500 MiB", r)
	}
	if !strings.HasPrefix(rows[0].Section, "Parked runs at fleet scale: 10 hand-example runs") {
		t.Errorf("section %q", rows[0].Section)
	}
}

// TestSatStall: a round in which one side of a compared pair took more
// than stallRatio times the other is a stall, named with both walls; the
// sides' figures of that round are dropped by reset, and a round within
// the ratio is none.
func TestSatStall(t *testing.T) {
	bare := &satSide{name: "bare-nogzip", walls: []time.Duration{2 * time.Second}, steps: []time.Duration{1}}
	agentRun := &satSide{name: "agentrun-nogzip", walls: []time.Duration{2100 * time.Millisecond}, steps: []time.Duration{1}}
	if got := satStall([2]*satSide{bare, agentRun}); got != "" {
		t.Fatalf("a round of 2.0 s against 2.1 s: stall %q, want none", got)
	}
	m := bare.mark()
	bare.walls, bare.steps = append(bare.walls, 64*time.Second), append(bare.steps, 2, 3)
	agentRun.walls = append(agentRun.walls, 2100*time.Millisecond)
	if got, want := satStall([2]*satSide{bare, agentRun}), "bare-nogzip 64.0 s against agentrun-nogzip 2.1 s"; got != want {
		t.Fatalf("stall %q, want %q", got, want)
	}
	bare.reset(m)
	if len(bare.walls) != 1 || len(bare.steps) != 1 {
		t.Fatalf("after reset: walls %v, steps %v; want the first round's alone", bare.walls, bare.steps)
	}
}
