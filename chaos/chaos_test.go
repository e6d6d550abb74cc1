package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCampaign runs a tiny campaign, one trial per kill point, and checks
// the table: every point hit, Indeterminate only at the write points, no
// duplicate ticket, no model step run twice. Under CI=true it fails when
// the dev server or PostgreSQL cannot start; elsewhere it skips.
func TestCampaign(t *testing.T) {
	res, err := Run(t.Context(), Config{Trials: len(allPoints), Seed: 1, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("campaign: %v", err)
		}
		t.Skipf("campaign cannot run (fails under CI=true): %v", err)
	}
	t.Log("\n" + res.Table())
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Stats() {
		if s.Trials != 1 || s.Hits != 1 || s.Dups != 0 || s.Repeated != 0 {
			t.Errorf("%s: %+v, want 1 trial, 1 hit, 0 duplicates, 0 repeated model calls", s.Point.Name, s)
		}
		if !s.Point.Uncertain && s.Done+s.Retry > 0 {
			t.Errorf("%s: Indeterminate where no write was uncertain", s.Point.Name)
		}
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

// TestPlan: the round-robin deal gives every point its share, whatever
// the shuffle.
func TestPlan(t *testing.T) {
	n := map[Point]int{}
	for _, p := range plan(allPoints, 100, 42) {
		n[p]++
	}
	for _, p := range allPoints {
		if n[p] < 100/len(allPoints) {
			t.Errorf("%s: %d trials of 100", p.Name, n[p])
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
