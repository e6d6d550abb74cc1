package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// A row is one figure of the table: a measured value, a baseline measured
// in the same run, and the goal for their ratio.
type row struct {
	// Section groups rows under a heading, e.g. "Step overhead".
	Section string
	// Figure says what was measured and, after "vs", against what.
	Figure   string
	Measured float64
	Baseline float64
	// Unit formats both numbers: "ms", "B", "tokens", "packages", "$" (US
	// dollars), "" (a plain number), or any other unit after two decimals
	// ("MB").
	Unit string
	// Goal is the highest ratio that meets the goal; 0 means the figure has
	// no goal (it explains another) unless Floor sets one.
	Goal float64
	// Floor is the lowest ratio that meets the goal (a share that must be
	// high, a figure that must match another); 0 means none. With Goal
	// too, the goal is the range from Floor to Goal.
	Floor float64
	// GoalNote is shown after the goal, e.g. "flat".
	GoalNote string
	// Missing, when set, says why the figure was not measured; the numbers
	// are then ignored and the goal counts neither as met nor as missed.
	Missing string
}

// Ratio returns measured / baseline: 1 when both are 0, NaN when only the
// baseline is.
func (r row) Ratio() float64 {
	switch {
	case r.Missing != "":
		return math.NaN()
	case r.Baseline == 0 && r.Measured == 0:
		return 1
	case r.Baseline == 0:
		return math.NaN()
	}
	return r.Measured / r.Baseline
}

// Met reports whether the row has a measured goal and meets it. The ratio
// is judged as the table shows it, to two decimals.
func (r row) Met() bool {
	if !r.hasGoal() || r.Missing != "" {
		return false
	}
	ratio := math.Round(r.Ratio()*100) / 100
	return (r.Goal == 0 || ratio <= r.Goal) && (r.Floor == 0 || ratio >= r.Floor)
}

// Missed reports whether the row has a measured goal and misses it (a ratio
// that cannot be computed misses).
func (r row) Missed() bool { return r.hasGoal() && r.Missing == "" && !r.Met() }

func (r row) hasGoal() bool { return r.Goal > 0 || r.Floor > 0 }

// goalText is the goal as the table shows it: "≤ 1.05", "≥ 0.80" or
// "0.99 to 1.01".
func (r row) goalText() string {
	switch {
	case r.Floor > 0 && r.Goal > 0:
		return fmt.Sprintf("%.2f to %.2f", r.Floor, r.Goal)
	case r.Floor > 0:
		return fmt.Sprintf("≥ %.2f", r.Floor)
	}
	return fmt.Sprintf("≤ %.2f", r.Goal)
}

func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case unit == "ms":
		return fmt.Sprintf("%.2f ms", v)
	case unit == "tokens":
		return fmt.Sprintf("%.0f tokens", v)
	case unit == "$":
		return fmt.Sprintf("$%.4f", v)
	case unit == "B":
		return fmt.Sprintf("%.0f B", v)
	case unit == "packages":
		return fmt.Sprintf("%.0f packages", v)
	case unit == "":
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

func (r row) cells() []string {
	goal := "—"
	if r.hasGoal() {
		goal = r.goalText()
		if r.GoalNote != "" {
			goal += " (" + r.GoalNote + ")"
		}
		switch {
		case r.Missing != "":
		case r.Met():
			goal += " ✓"
		default:
			goal += " ✗"
		}
	}
	if r.Missing != "" {
		return []string{r.Figure, "not measured yet: " + r.Missing, "—", "—", goal}
	}
	return []string{r.Figure, format(r.Measured, r.Unit), format(r.Baseline, r.Unit), format(r.Ratio(), ""), goal}
}

// writeTable writes rows as one Markdown table, with a bold row opening
// each section.
func writeTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| figure | measured | baseline | ratio | goal |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	section := ""
	for _, r := range rows {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(w, "| **%s** | | | | |\n", section)
		}
		cells := r.cells()
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// verdict is the line under the table: the goals missed (or that all
// measured goals were met) and the figures not measured yet.
func verdict(rows []row) string {
	var missed, missing []string
	met := 0
	for _, r := range rows {
		switch {
		case r.Missed():
			missed = append(missed, fmt.Sprintf("%s: ratio %s, goal %s", r.Figure, format(r.Ratio(), ""), r.goalText()))
		case r.Met():
			met++
		case r.Missing != "":
			missing = append(missing, r.Figure)
		}
	}
	var b strings.Builder
	if len(missed) == 0 {
		fmt.Fprintf(&b, "Goals: all %d measured goals met.", met)
	} else {
		fmt.Fprintf(&b, "MISSED GOALS (%d of %d): %s.", len(missed), len(missed)+met, strings.Join(missed, "; "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, " Not measured yet: %s.", strings.Join(missing, "; "))
	}
	return b.String()
}
