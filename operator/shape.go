package operator

import (
	"fmt"
	"math"
	"strings"

	"github.com/agentrun/agentrun/agent"
)

// MaxMessageLen bounds a message's content, a deny's reason and a done
// result, in bytes: each is carried inline (in the run's state, a fact, the
// history) and read by the model.
const MaxMessageLen = 16 << 10

// maxExecution bounds an Execution (a Temporal run id is a 36-byte UUID).
const maxExecution = 128

// BudgetFormat says what a budget payload looks like, for error messages.
const BudgetFormat = `{"MaxTurns": 40, "MaxTokens": 200000, "MaxCost": 5} (0 or absent keeps a limit; MaxCost in US dollars)`

// MessageFormat says what a message payload looks like.
const MessageFormat = `{"Content": "also check the staging database"}`

// CheckShape checks an input alone, by its operation: a well-formed marker
// or step, a reason for a deny, a result for a done, a limit to set, some
// text, each within its size. It is the first step because it needs no
// run: it runs where the input arrives, before anything is recorded
// ([Decode] on Temporal, the local engine's Signal, the programs' command
// line), and [Check] then decides it against the run. The error wraps
// ErrInvalid and says what would be valid.
func CheckShape(sig Signal) error {
	switch sig.Name {
	case SignalApprove, SignalDeny:
		return checkDecision(sig)
	case SignalReconcile:
		return checkReconcile(sig)
	case SignalBudget:
		return checkBudget(sig)
	case SignalMessage:
		return checkMessage(sig)
	}
	return fmt.Errorf("%w signal %q: want approve, deny, reconcile, budget or message", ErrInvalid, sig.Name)
}

// checkDecision checks an approve or deny: a well-formed marker, a reason
// for a deny, and a well-formed Digest and Execution when given.
func checkDecision(sig Signal) error {
	if !agent.IsToolStep(sig.Marker) {
		return fmt.Errorf("%w %s: marker %q is not a tool step; want %s", ErrInvalid, sig.Name, sig.Marker, agent.StepFormat)
	}
	if sig.Expired {
		return fmt.Errorf("%w %s: Expired is the engine's, set when an approval timeout passes; leave it out", ErrInvalid, sig.Name)
	}
	if sig.Name == SignalDeny && strings.TrimSpace(sig.Reason) == "" {
		return fmt.Errorf("%w deny: the reason is empty; say why, the model reads it", ErrInvalid)
	}
	if sig.Name == SignalDeny && len(sig.Reason) > MaxMessageLen {
		return fmt.Errorf("%w deny: the reason is %d bytes; want at most %d (the model reads it, as a message)", ErrInvalid, len(sig.Reason), MaxMessageLen)
	}
	if sig.Digest != "" && !agent.ValidDigest(sig.Digest) {
		return fmt.Errorf("%w %s: digest %q is not an arguments digest; want %s, or none", ErrInvalid, sig.Name, agent.Clip(sig.Digest, 80), agent.DigestFormat)
	}
	if len(sig.Execution) > maxExecution {
		return fmt.Errorf("%w %s: execution is %d bytes; want the run id of the run's first execution (at most %d bytes), or none", ErrInvalid, sig.Name, len(sig.Execution), maxExecution)
	}
	return nil
}

// checkReconcile checks a reconcile: a tool step, outcome done with a
// result, or retry without one.
func checkReconcile(sig Signal) error {
	if !agent.IsToolStep(sig.Step) {
		return fmt.Errorf("%w reconcile: step %q is not a tool step; want %s", ErrInvalid, sig.Step, agent.StepFormat)
	}
	switch sig.Outcome {
	case OutcomeDone:
		if sig.Result == "" {
			return fmt.Errorf("%w reconcile: outcome done needs the result the step had (e.g. the ticket id)", ErrInvalid)
		}
		if len(sig.Result) > MaxMessageLen {
			return fmt.Errorf("%w reconcile: the done result is %d bytes; want at most %d (the model reads it, as a message)", ErrInvalid, len(sig.Result), MaxMessageLen)
		}
	case OutcomeRetry:
		if sig.Result != "" {
			return fmt.Errorf("%w reconcile: outcome retry takes no result; use done to give one", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w reconcile: outcome %q: want %q or %q", ErrInvalid, sig.Outcome, OutcomeDone, OutcomeRetry)
	}
	return nil
}

// checkBudget checks a budget: no negative limit, and at least one limit
// to set.
func checkBudget(sig Signal) error {
	switch {
	case sig.MaxTurns < 0:
		return fmt.Errorf("%w budget: MaxTurns %d is negative; want a number of model calls, or 0 to keep the limit", ErrInvalid, sig.MaxTurns)
	case sig.MaxTokens < 0:
		return fmt.Errorf("%w budget: MaxTokens %d is negative; want a number of tokens, or 0 to keep the limit", ErrInvalid, sig.MaxTokens)
	case sig.MaxCost < 0 || math.IsNaN(sig.MaxCost) || math.IsInf(sig.MaxCost, 0):
		return fmt.Errorf("%w budget: MaxCost %v is not a cost; want US dollars above what the run cost, or 0 to keep the limit", ErrInvalid, sig.MaxCost)
	case sig.MaxTurns == 0 && sig.MaxTokens == 0 && sig.MaxCost == 0:
		return fmt.Errorf("%w budget: it sets no limit; want %s", ErrInvalid, BudgetFormat)
	}
	return nil
}

// checkMessage checks a message: some text, not too much.
func checkMessage(sig Signal) error {
	switch {
	case strings.TrimSpace(sig.Content) == "":
		return fmt.Errorf("%w message: the content is empty; want some text, e.g. %s", ErrInvalid, MessageFormat)
	case len(sig.Content) > MaxMessageLen:
		return fmt.Errorf("%w message: the content is %d bytes; want at most %d", ErrInvalid, len(sig.Content), MaxMessageLen)
	}
	return nil
}
