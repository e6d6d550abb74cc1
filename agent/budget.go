package agent

import "fmt"

// DefaultMaxTurns is a run's limit on model calls when none is set.
const DefaultMaxTurns = 25

// Budget is a run's limits: model calls (turns), tokens (input plus
// output, as the model replies report them) and cost (US dollars, at the
// models' prices). The JSON field names are the payload of the budget
// operator input: {"MaxTurns": 40, "MaxTokens": 200000, "MaxCost": 5}.
type Budget struct {
	// MaxTurns bounds the model calls; 0 means DefaultMaxTurns.
	MaxTurns int `json:"MaxTurns"`
	// MaxTokens bounds the tokens; 0 means no limit.
	MaxTokens int64 `json:"MaxTokens"`
	// MaxCost bounds the cost in US dollars; 0 means no limit.
	MaxCost float64 `json:"MaxCost,omitempty"`
}

// WithDefaults returns b with a zero MaxTurns set to DefaultMaxTurns.
func (b Budget) WithDefaults() Budget {
	if b.MaxTurns <= 0 {
		b.MaxTurns = DefaultMaxTurns
	}
	return b
}

// Total is the tokens a usage counts against MaxTokens: input plus output.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Exceeded says why a run that made turns model calls and used u may not
// make another, or "" when it may.
func (b Budget) Exceeded(turns int, u Usage) string {
	b = b.WithDefaults()
	if turns >= b.MaxTurns {
		return fmt.Sprintf("the run made %d model calls; its limit is %d", turns, b.MaxTurns)
	}
	if b.MaxTokens > 0 && u.Total() >= b.MaxTokens {
		return fmt.Sprintf("the run used %d tokens; its limit is %d", u.Total(), b.MaxTokens)
	}
	if b.MaxCost > 0 && u.Cost >= b.MaxCost {
		return fmt.Sprintf("the run cost %s; its limit is %s", FormatCost(u.Cost), FormatCost(b.MaxCost))
	}
	return ""
}

// Limit applies the budget to a decision of the loop: a model step the
// budget does not allow becomes a BudgetExceeded outcome (Reason says which
// limit), where the run waits until its limits are raised. turns come from
// the decision's checkpoint; used is what the run's model calls used.
func (b Budget) Limit(d Decision, used Usage) Decision {
	if d.Step == nil || d.Step.Kind != KindModel {
		return d
	}
	if why := b.Exceeded(d.Checkpoint.Turn, used); why != "" {
		return Decision{Outcome: &Outcome{Status: StatusBudgetExceeded, Reason: why}, Checkpoint: d.Checkpoint}
	}
	return d
}
