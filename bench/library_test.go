package main

import (
	"strings"
	"testing"
)

// TestLibraryQuick runs the library section alone, as -quick sizes it:
// every run on both workers answers after its turns (runPaired checks),
// the step time is measured on both with the 1.02 goal, and the embedded
// worker links more than the plain one, agentrun's packages among them,
// and less than the worker program, with the 1.3 goals on packages and
// both sizes.
func TestLibraryQuick(t *testing.T) {
	env := sectionEnv(t)
	bin, err := buildWorker(t.Context(), env.subdir("bin"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := library(t.Context(), env, bin, paramsFor(true).lib)
	if err != nil {
		t.Fatal(err)
	}
	byFigure := map[string]row{}
	for _, r := range rows {
		if r.Missing != "" || r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v (%s); want both measured", r.Figure, r.Measured, r.Baseline, r.Missing)
		}
		key, _, _ := strings.Cut(r.Figure, ";")
		byFigure[key] = r
	}
	want := map[string]float64{ // figure: goal
		"ms per activity, embedded worker vs the worker program (median of rounds)":                  1.02,
		"packages linked (go list -deps, the standard library's included), embedded vs plain worker": 1.3,
		"binary size as go build makes it (symbols and DWARF kept), embedded vs plain worker":        1.3,
		"binary size stripped (go build -ldflags='-s -w'), embedded vs plain worker":                 1.3,
	}
	for fig, goal := range want {
		if r, ok := byFigure[fig]; !ok || r.Goal != goal {
			t.Errorf("row %q: %+v; want it with goal %v", fig, r, goal)
		}
	}
	pkgs := byFigure["packages linked (go list -deps, the standard library's included), embedded vs plain worker"]
	program := byFigure["packages linked, the worker program (cmd worker: both providers, MCP, metrics, tracing) vs plain worker"]
	if pkgs.Measured <= pkgs.Baseline || program.Measured <= pkgs.Measured {
		t.Errorf("packages linked: embedded %.0f, plain %.0f, the worker program %.0f; want plain < embedded < the program", pkgs.Measured, pkgs.Baseline, program.Measured)
	}
	var extra string
	for _, r := range rows {
		if strings.HasPrefix(r.Figure, "packages linked outside the standard library") {
			extra = r.Figure
		}
	}
	if !strings.Contains(extra, "github.com/agentrun/agentrun ") {
		t.Errorf("the extra packages by module %q do not name agentrun's", extra)
	}
	for _, r := range rows {
		t.Logf("%s: %s vs %s (%.2f)", r.Figure, format(r.Measured, r.Unit), format(r.Baseline, r.Unit), r.Ratio())
	}
}
