package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/workflows"
)

// minHits is how many hits each cell needs in a campaign that deals it
// minHits trials or more on average (the default deals each
// trialsPerCell).
const minHits = 5

// Result is a campaign's outcome.
type Result struct {
	Trials   int
	Seed     int64
	Cells    []Cell
	Outcomes []Outcome
	Took     time.Duration
}

// CellStats sums the trials of one kill point on one engine.
type CellStats struct {
	Cell                                      Cell
	Trials, Hits, Done, Retry, Dups, Repeated int
	// Scenarios counts the trials per scenario name.
	Scenarios map[string]int
	Failed    int
	Took      time.Duration // sum
}

// Stats returns one row per cell, in the cells' order.
func (r *Result) Stats() []CellStats {
	var out []CellStats
	for _, c := range r.Cells {
		s := CellStats{Cell: c, Scenarios: map[string]int{}}
		for _, o := range r.Outcomes {
			if o.Cell != c {
				continue
			}
			s.Trials++
			s.Scenarios[o.Scenario]++
			s.Took += o.Took
			if o.Hit {
				s.Hits++
			}
			switch o.Settled {
			case "done":
				s.Done++
			case "retry":
				s.Retry++
			}
			s.Dups += o.Duplicates
			s.Repeated += o.RepeatedModel
			if o.Failure != "" {
				s.Failed++
			}
		}
		out = append(out, s)
	}
	return out
}

// Err reports the failed trials, and cells with too few hits in a
// campaign of minHitsTrials trials or more.
func (r *Result) Err() error {
	var errs []error
	for i, o := range r.Outcomes {
		if o.Failure != "" {
			errs = append(errs, fmt.Errorf("trial %d (%s, %s at %s): %s", i+1, o.Cell, o.Scenario, o.Target, o.Failure))
		}
	}
	if len(r.Cells) > 0 && r.Trials >= minHits*len(r.Cells) {
		for _, s := range r.Stats() {
			if s.Hits < minHits {
				errs = append(errs, fmt.Errorf("kill point %s: %d hits, want at least %d", s.Cell, s.Hits, minHits))
			}
		}
	}
	return errors.Join(errs...)
}

// Table is the campaign's Markdown table and summary line.
func (r *Result) Table() string {
	var b strings.Builder
	var names []string
	for _, s := range scenarios {
		names = append(names, s.Name)
	}
	fmt.Fprintf(&b, "%d trials over two scenarios (%s: the hand example, 3 model turns and 1 ticket; %s: 8 model turns, 4 lookups, 3 tickets), "+
		"kill points dealt round-robin per engine and shuffled with seed %d, the step crashed chosen at random within the run; took %s. "+
		"At the freeze and partition points (8-12, the Temporal fleet) the worker holding the step is frozen or cut off for at least %s, past the heartbeat timeout (%s), while two other workers carry on, "+
		"until a retry of the step has started or it is no longer pending (at most %s), then resumed or healed; its held write goes on by itself (AGENTRUN_TEST_HOLD_FOR); each point runs in three settle modes of create_ticket (no key and no probe: a person settles it from the ticket file; probe only: find_ticket by title; key only: request_id). "+
		"create_ticket's timeout is %s in every trial.\n\n",
		r.Trials, names[0], names[1], r.Seed, r.Took.Round(time.Second), faultFor, workflows.HeartbeatTimeout, maxFault, writeTimeout)
	b.WriteString("| engine | kill point | trials (" + strings.Join(names, "/") + ") | hits | Indeterminate (done/retry) | duplicates | repeated model calls | failed | s per trial |\n")
	b.WriteString("|---|---|---:|---:|---|---:|---:|---:|---:|\n")
	var trials, hits, ind, dups, rep, failed int
	for _, s := range r.Stats() {
		per := 0.0
		if s.Trials > 0 {
			per = s.Took.Seconds() / float64(s.Trials)
		}
		var split []string
		for _, n := range names {
			split = append(split, fmt.Sprint(s.Scenarios[n]))
		}
		mode := ""
		if s.Cell.Settle != "" {
			mode = " (" + settleLabels[s.Cell.Settle] + ")"
		}
		fmt.Fprintf(&b, "| %s | %d %s%s: %s | %d (%s) | %d | %d (%d/%d) | %d | %d | %d | %.1f |\n",
			s.Cell.Engine, s.Cell.Point.N, s.Cell.Point.Name, mode, s.Cell.Point.Where, s.Trials, strings.Join(split, "/"), s.Hits,
			s.Done+s.Retry, s.Done, s.Retry, s.Dups, s.Repeated, s.Failed, per)
		trials += s.Trials
		hits += s.Hits
		ind += s.Done + s.Retry
		dups += s.Dups
		rep += s.Repeated
		failed += s.Failed
	}
	fmt.Fprintf(&b, "\nSummary: %d trials, %d hits, %d Indeterminate (all at points inside a write: %v), %d duplicate tickets, %d repeated model calls, %d failed trials.\n",
		trials, hits, ind, r.indeterminateJustified(), dups, rep, failed)
	return b.String()
}

func (r *Result) indeterminateJustified() bool {
	for _, o := range r.Outcomes {
		if o.Settled != "" && !o.Cell.Point.Uncertain {
			return false
		}
	}
	return true
}

// sectionTitle heads the campaign's section of BENCHMARKS.md.
const sectionTitle = "## Crash campaign"

// Write writes the table to path, or, when path is "", replaces (or
// appends) the "## Crash campaign" section at the end of BENCHMARKS.md at
// the module root, keeping the rest of the file.
func (r *Result) Write(path string) error {
	section := sectionTitle + "\n\n`make chaos` (" + "go run ./chaos" + "). " + r.Table()
	if path != "" {
		return os.WriteFile(path, []byte(section), 0o644)
	}
	path = filepath.Join(testkit.Root(), "BENCHMARKS.md")
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(replaceSection(string(old), section)), 0o644)
}

// replaceSection returns doc with its sectionTitle section (from the title
// to the next "## " heading or the end) replaced by section, or with
// section appended when it has none.
func replaceSection(doc, section string) string {
	i := strings.Index(doc, "\n"+sectionTitle+"\n")
	if i < 0 {
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		if doc != "" {
			doc += "\n"
		}
		return doc + section
	}
	head, rest := doc[:i+1], doc[i+1+len(sectionTitle):]
	tailPart := ""
	if j := strings.Index(rest, "\n## "); j >= 0 {
		tailPart = rest[j+1:]
	}
	if tailPart != "" {
		return head + section + "\n" + tailPart
	}
	return head + section
}
