package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

const (
	maxTurnsWant  = "a positive number of model calls, e.g. 40"
	maxTokensWant = "a positive number of tokens (input plus output), e.g. 200000"
	maxCostWant   = "a positive number of US dollars at the models' prices (the models file), e.g. 5 or 0.5"
)

// positiveCost parses a positive cost in US dollars named what, or says in
// one line what is valid.
func positiveCost(what, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "$")), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s %q: want %s", what, v, maxCostWant)
	}
	return f, nil
}

// positive parses a positive whole number named what, or says in one line
// what is valid.
func positive(what, v, want string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want %s", what, v, want)
	}
	return n, nil
}

// Limits is the budget a starter gives a run it starts: --max-turns and
// --max-tokens over the settings.
type Limits struct {
	agent.Budget
	// Explicit is set when a flag named a limit. A run that exists keeps
	// its own limits, so the starter refuses flags for it.
	Explicit bool
	// Session (starter --session) keeps a new run open after each answer:
	// it waits Idle for a message, at most SessionIdle.
	Session     bool
	SessionIdle time.Duration
	// Follow (starter --local --follow, implied by --wait and --session
	// there) keeps the local driver on its run where it waits: it goes on
	// when the operator's record lands (FollowFlags).
	Follow bool
	// Stream, when set, says whether a new run streams its model text
	// (starter --stream); nil: the run's default (sessions stream).
	Stream *bool
}

// Limits parses the starter's --max-turns, --max-tokens and --max-cost (""
// when not given) over the settings' defaults.
func (s Settings) Limits(maxTurns, maxTokens, maxCost string) (Limits, error) {
	l := Limits{Budget: agent.Budget{MaxTurns: s.MaxTurns, MaxTokens: s.MaxTokens}, SessionIdle: s.SessionIdle}
	if maxTurns != "" {
		n, err := positive("--max-turns", maxTurns, maxTurnsWant)
		if err != nil || n > 1<<31-1 {
			return l, usagef("--max-turns %q: want %s", maxTurns, maxTurnsWant)
		}
		l.MaxTurns, l.Explicit = int(n), true
	}
	if maxTokens != "" {
		n, err := positive("--max-tokens", maxTokens, maxTokensWant)
		if err != nil {
			return l, usagef("%v", err)
		}
		l.MaxTokens, l.Explicit = n, true
	}
	if maxCost != "" {
		f, err := positiveCost("--max-cost", maxCost)
		if err != nil {
			return l, usagef("%v", err)
		}
		l.MaxCost, l.Explicit = f, true
	}
	return l, nil
}

// errLimitsOfExisting refuses --max-turns or --max-tokens for a run that
// exists: its limits are raised with the budget command.
func errLimitsOfExisting(op engine, runID string) error {
	return usagef("run %s exists and keeps its limits: --max-turns, --max-tokens and --max-cost are for a new run; raise its limits with %s MAX_TURNS [MAX_TOKENS [MAX_COST]]", runID, op.reconcile("budget", runID))
}

// parseBudget turns "budget RUN MAX_TURNS [MAX_TOKENS [MAX_COST]]" into a signal.
func parseBudget(args []string) (string, operator.Signal, error) {
	sig := operator.Signal{Name: operator.SignalBudget}
	if len(args) < 3 || len(args) > 5 {
		return "", sig, usagef("budget takes %s; got %d argument(s)", budgetArgs, len(args)-1)
	}
	runID := args[1]
	if err := operator.ValidRunID(runID); err != nil {
		return "", sig, usagef("%v", err)
	}
	n, err := strconv.ParseInt(args[2], 10, 32)
	if err != nil {
		return "", sig, usagef("budget MAX_TURNS %q: want a number of model calls above those the run made, or 0 to keep the limit", args[2])
	}
	sig.MaxTurns = int(n)
	if len(args) >= 4 {
		if sig.MaxTokens, err = strconv.ParseInt(args[3], 10, 64); err != nil {
			return "", sig, usagef("budget MAX_TOKENS %q: want a number of tokens above those the run used, or 0 to keep the limit", args[3])
		}
	}
	if len(args) == 5 {
		v := strings.TrimPrefix(strings.TrimSpace(args[4]), "$")
		if sig.MaxCost, err = strconv.ParseFloat(v, 64); err != nil || math.IsNaN(sig.MaxCost) || math.IsInf(sig.MaxCost, 0) {
			return "", sig, usagef("budget MAX_COST %q: want US dollars above what the run cost, e.g. 5 or 0.5, or 0 to keep the limit", args[4])
		}
	}
	if err := operator.CheckShape(sig); err != nil {
		return "", sig, usagef("%v", err)
	}
	return runID, sig, nil
}

const budgetArgs = "RUN MAX_TURNS [MAX_TOKENS [MAX_COST]]"

// budgetLine is what show prints of a run's budget.
func budgetLine(turns int, u agent.Usage, b agent.Budget) string {
	tokens := "no limit"
	if b.MaxTokens > 0 {
		tokens = fmt.Sprintf("limit %d", b.MaxTokens)
	}
	cached := ""
	if c := u.Cached(); c != "" {
		cached = "; " + c
	}
	line := fmt.Sprintf("budget: %d of %d model calls; %d tokens (%d input, %d output%s), %s", turns, b.MaxTurns, u.Total(), u.InputTokens, u.OutputTokens, cached, tokens)
	if u.Cost > 0 || b.MaxCost > 0 {
		limit := "no limit"
		if b.MaxCost > 0 {
			limit = "limit " + agent.FormatCost(b.MaxCost)
		}
		line += fmt.Sprintf("; cost %s, %s", agent.FormatCost(u.Cost), limit)
	}
	return line
}

// cachedNote is " (800 read from the cache, 120 written to it)" and the like,
// or "" when the provider reported no cached tokens.
func cachedNote(u agent.Usage) string {
	if c := u.Cached(); c != "" {
		return " (" + c + ")"
	}
	return ""
}
