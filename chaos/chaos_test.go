package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
)

// testCells are TestCampaign's: the kill points 1-7 on both engines, and
// each freeze and partition point once, the settle modes spread over them.
var testCells = append(allCells[:12:12],
	Cell{engineTemporal, pointFreezeWriteBefore, settleProbe}, Cell{engineTemporal, pointFreezeWriteAfter, settleNone},
	Cell{engineTemporal, pointFreezeModel, settleKey}, Cell{engineTemporal, pointCutTemporal, settleProbe},
	Cell{engineTemporal, pointCutPostgres, settleNone})

// TestCampaign runs a tiny campaign, one trial per kill point and engine
// (the hand example on Temporal, the long run locally), the freeze and
// partition points once each, and checks the table: every point hit,
// Indeterminate only at the write points, no duplicate ticket, no model
// step run twice. Under CI=true it fails when the dev server or
// PostgreSQL cannot start; elsewhere it skips.
func TestCampaign(t *testing.T) {
	res := runCells(t, testCells)
	for _, s := range res.Stats() {
		if s.Trials != 1 || s.Hits != 1 || s.Dups != 0 || s.Repeated != 0 {
			t.Errorf("%s: %+v, want 1 trial, 1 hit, 0 duplicates, 0 repeated model calls", s.Cell, s)
		}
		if !s.Cell.Point.Uncertain && s.Done+s.Retry > 0 {
			t.Errorf("%s: Indeterminate where no write was uncertain", s.Cell)
		}
	}
	model := map[string]int{}
	for _, o := range res.Outcomes {
		model[o.Scenario] = max(model[o.Scenario], o.ModelSteps)
		if want := map[string]int{"hand": 1, "long": 3}[o.Scenario]; o.Tickets != want {
			t.Errorf("%s, %s: %d tickets, want %d", o.Cell, o.Scenario, o.Tickets, want)
		}
	}
	if model["hand"] != 3 || model["long"] != 8 {
		t.Errorf("model steps per scenario %v, want hand 3, long 8", model)
	}
	out := filepath.Join(t.TempDir(), "campaign.md")
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), sectionTitle) || !strings.Contains(string(b), "0 duplicate tickets") {
		t.Fatalf("written table %q, %v", b, err)
	}
}

// runCells runs one trial in each of cells (seed 1) and returns the
// campaign's result, logging its table; it fails the test when a trial
// errs, and when the campaign cannot run under CI=true (else it skips).
func runCells(t *testing.T, cells []Cell) *Result {
	t.Helper()
	res, err := Run(t.Context(), Config{Trials: len(cells), Cells: cells, Seed: 1, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		testkit.Unavailable(t, "the campaign", err)
	}
	t.Log("\n" + res.Table())
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPlan: the round-robin deal gives every cell its share, whatever the
// shuffle, with both scenarios in every cell; a campaign of one trial per
// cell runs both scenarios, the long one locally.
func TestPlan(t *testing.T) {
	n := map[Cell]map[string]int{}
	trials := trialsPerCell * len(allCells)
	for _, p := range plan(allCells, trials, 42) {
		if n[p.Cell] == nil {
			n[p.Cell] = map[string]int{}
		}
		n[p.Cell][p.Scenario.Name]++
	}
	for _, c := range allCells {
		if n[c]["hand"] != trialsPerCell/2 || n[c]["long"] != trialsPerCell/2 {
			t.Errorf("%s: %v of %d, want %d of each scenario", c, n[c], trials, trialsPerCell/2)
		}
	}
	one := map[string]int{}
	for _, p := range plan(allCells, len(allCells), 1) {
		one[p.Cell.Engine+"/"+p.Scenario.Name]++
	}
	if one["temporal/hand"] != 22 || one["local/long"] != 6 || one["cluster/hand"] != 2 || len(one) != 3 {
		t.Errorf("one trial per cell: %v, want the hand example on the 22 Temporal cells and the 2 cluster ones, the long run on the 6 local ones", one)
	}
}

// TestParseCells: -points takes a cell by its full name, a point on
// either engine, or a point in all its settle modes.
func TestParseCells(t *testing.T) {
	for _, c := range []struct {
		list string
		want []string
	}{
		{"temporal/model", []string{"temporal/model"}},
		{"model", []string{"temporal/model", "local/model"}},
		{"freeze-write-before", []string{"temporal/freeze-write-before/none", "temporal/freeze-write-before/probe", "temporal/freeze-write-before/key"}},
		{"cut-temporal/probe,temporal/cut-postgres/key", []string{"temporal/cut-temporal/probe", "temporal/cut-postgres/key"}},
	} {
		cells, err := parseCells(c.list)
		var got []string
		for _, cell := range cells {
			got = append(got, cell.String())
		}
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("parseCells(%q) = %v, %v; want %v", c.list, got, err, c.want)
		}
	}
	if _, err := parseCells("freeze-lookup"); err == nil || !strings.Contains(err.Error(), "valid: temporal/model") {
		t.Errorf("parseCells(freeze-lookup): %v, want an error naming the valid points", err)
	}
}

// TestHoldLine: the campaign reads the time of a hold's log line for the
// step it aims at, not another's.
func TestHoldLine(t *testing.T) {
	log := `time=2026-12-01T21:00:00.100Z level=WARN msg="hold before create_ticket: holding for 2s" step=tool/3/0/create_ticket
time=2026-12-01T21:00:01.250Z level=WARN msg="hold before create_ticket: holding for 2s" step=tool/5/0/create_ticket
time=2026-12-01T21:00:09.500Z level=WARN msg="hold before create_ticket: released" step=tool/5/0/create_ticket
`
	at, ok := holdLine(log, "hold before create_ticket: holding for", "tool/5/0/create_ticket")
	if want := time.Date(2026, 12, 1, 21, 0, 1, 250e6, time.UTC); !ok || !at.Equal(want) {
		t.Errorf("holding line at %v, %v; want %v", at, ok, want)
	}
	if _, ok := holdLine(log, "hold before create_ticket: released", "tool/3/0/create_ticket"); ok {
		t.Error("found a release of tool/3/0/create_ticket, which the log does not have")
	}
}

// TestScenarios: the steps the campaign aims at exist in the scripts.
func TestScenarios(t *testing.T) {
	long := scenarios[1]
	if got := long.steps("create_ticket"); strings.Join(got, " ") != "tool/3/0/create_ticket tool/5/0/create_ticket tool/7/0/create_ticket" {
		t.Errorf("long writes %v", got)
	}
	if got := long.steps("lookup"); len(got) != 4 {
		t.Errorf("long lookups %v", got)
	}
	for step, want := range map[string]string{"llm/1": "", "llm/4": "tool/3/0/create_ticket", "tool/4/0/lookup": "llm/4"} {
		if got := long.before(step); got != want {
			t.Errorf("before(%s) = %q, want %q", step, got, want)
		}
	}
	if got := long.title("tool/5/0/create_ticket"); got != "Staging credentials for the orders service" {
		t.Errorf("title %q", got)
	}
	if got := len(long.tickets()); got != 3 {
		t.Errorf("%d tickets", got)
	}
	for _, c := range []struct {
		cell   Cell
		target string
		want   int
	}{
		{Cell{engineTemporal, pointModel, ""}, "llm/7", 6},
		{Cell{engineTemporal, pointFreezeModel, settleKey}, "llm/2", 1},
		{Cell{engineLocal, pointBetween, ""}, "tool/4/0/lookup", 4},
		{Cell{engineTemporal, pointBetween, ""}, "tool/5/0/create_ticket", -1},
		{Cell{engineTemporal, pointFreezeWriteBefore, settleProbe}, "tool/5/0/create_ticket", -1},
		{Cell{engineLocal, pointRead, ""}, "tool/4/0/lookup", -1},
	} {
		if got := slowTurn(c.cell, c.target); got != c.want {
			t.Errorf("slowTurn(%s, %s) = %d, want %d", c.cell, c.target, got, c.want)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"", "## Crash campaign\nNEW\n"},
		{"# B\n\ntext\n", "# B\n\ntext\n\n## Crash campaign\nNEW\n"},
		{"# B\n\n## Crash campaign\nOLD\n", "# B\n\n## Crash campaign\nNEW\n"},
		{"# B\n\n## Crash campaign\nOLD\n\n## Next\nkeep\n", "# B\n\n## Crash campaign\nNEW\n\n## Next\nkeep\n"},
	} {
		if got := replaceSection(c.doc, "## Crash campaign\nNEW\n"); got != c.want {
			t.Errorf("replaceSection(%q) = %q, want %q", c.doc, got, c.want)
		}
	}
}
