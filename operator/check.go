package operator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Stand is where a run stands when an operator's input arrives: what
// [Check] checks the input against. Each engine fills it from its own
// records.
type Stand struct {
	// RunID names the run in errors.
	RunID string
	// Status is the run's status; a terminal one refuses every input.
	Status agent.Status
	// Outcome is where the loop stands (nil while a step runs); Facts is
	// what is recorded.
	Outcome *agent.Outcome
	Facts   *agent.Facts
	// Budget is the run's limits now; Turns and Usage what it used of them.
	Budget agent.Budget
	Turns  int
	Usage  agent.Usage
	// Local is set on the local engine, which refuses every Execution (a
	// journal has no executions). On Temporal, FirstExecution is the run
	// id of the run's first execution: an approve or deny that names
	// another is refused.
	Local          bool
	FirstExecution string
	// Holder is the attempt of a write that may still be running: a retry
	// of its step is refused until Holder.Until. Nil when none may run.
	Holder *Holder
	// Now is the engine's clock.
	Now time.Time
}

// Holder is an attempt of a write step that may still be running.
type Holder struct {
	Step string
	// Attempt names it for people: "attempt 1 (worker 123@host)".
	Attempt string
	// Until is when it can no longer act: its deadline plus the fence's
	// grace.
	Until time.Time
}

// Check decides an input that passed [CheckShape] against where the run
// stands; it is the second step because it needs the run's state, which
// each engine reads from its own records into s. In order: a run that
// ended refuses it ([Ended]), an Execution must name the run's first
// execution, a budget must raise each limit it sets above what is used,
// any other input must be valid where the loop stands ([CheckLoop]), and a
// retry waits until the attempt that may still run its write cannot
// ([CheckRetry]). It changes nothing. The error wraps ErrInvalid and says
// what would be valid.
func Check(sig Signal, s Stand) error {
	if s.Status.Terminal() {
		return Ended(sig.Name, s.Status)
	}
	if err := checkExecution(sig, s); err != nil {
		return err
	}
	if sig.Name == SignalBudget {
		return checkRaise(sig, s.Budget, s.Turns, s.Usage)
	}
	if err := CheckLoop(sig, s.Outcome, s.Facts); err != nil {
		return err
	}
	if h := s.Holder; sig.Name == SignalReconcile && sig.Outcome == OutcomeRetry && h != nil && h.Step == sig.Step {
		return CheckRetry(h.Step, h.Attempt, h.Until, s.Now)
	}
	return nil
}

// checkExecution checks an input's Execution against the run's first
// execution.
func checkExecution(sig Signal, s Stand) error {
	switch {
	case sig.Execution == "":
		return nil
	case s.Local:
		return fmt.Errorf("%w %s: execution %q names a Temporal run; a local run has none; leave it out", ErrInvalid, sig.Name, agent.Clip(sig.Execution, 80))
	case sig.Execution != s.FirstExecution:
		return fmt.Errorf("%w %s: execution %s is not this run's, whose first execution is %s: the run was started again under its id since; look again with reconcile show %s and decide on what it shows", ErrInvalid, sig.Name, sig.Execution, s.FirstExecution, s.RunID)
	}
	return nil
}

// CheckRetry refuses a person's retry of step while the attempt that
// started it last (who, "attempt 1 (worker ...)") may still be running
// at now, that is before until: a retry then could run the write beside
// it. Both engines use it.
func CheckRetry(step, who string, until, now time.Time) error {
	if until.IsZero() || !now.Before(until) {
		return nil
	}
	return fmt.Errorf("%w reconcile: %s of %s may still be running until %s; check again after that", ErrInvalid, who, step, FormatUntil(until))
}

// FormatUntil renders a fence's end for people: UTC, to the second.
func FormatUntil(t time.Time) string {
	return t.UTC().Format("15:04:05 UTC")
}

// Ended is the error every operator input gets once the run is in a
// terminal status: nothing changes a run after Completed, Failed or
// Cancelled.
func Ended(name string, s agent.Status) error {
	return fmt.Errorf("%w %s: the run is already %s; nothing changes a run after it ended", ErrInvalid, name, s)
}

// checkRaise checks a budget against a run that made turns model calls
// and used u: each limit it sets must be above what is used. cur is the
// run's budget now, named in the error.
func checkRaise(sig Signal, cur agent.Budget, turns int, u agent.Usage) error {
	if sig.MaxTurns != 0 && sig.MaxTurns <= turns {
		return fmt.Errorf("%w budget: MaxTurns %d is not above the %d model calls the run made; want at least %d, or 0 to keep the limit (%d)", ErrInvalid, sig.MaxTurns, turns, turns+1, cur.WithDefaults().MaxTurns)
	}
	if sig.MaxTokens != 0 && sig.MaxTokens <= u.Total() {
		return fmt.Errorf("%w budget: MaxTokens %d is not above the %d tokens the run used; want at least %d, or 0 to keep the limit", ErrInvalid, sig.MaxTokens, u.Total(), u.Total()+1)
	}
	if sig.MaxCost != 0 && sig.MaxCost <= u.Cost {
		return fmt.Errorf("%w budget: MaxCost %s is not above the %s the run cost; want more, or 0 to keep the limit", ErrInvalid, agent.FormatCost(sig.MaxCost), agent.FormatCost(u.Cost))
	}
	return nil
}

// RaisedBudget is cur with the limits a budget signal sets.
func RaisedBudget(cur agent.Budget, sig Signal) agent.Budget {
	if sig.MaxTurns != 0 {
		cur.MaxTurns = sig.MaxTurns
	}
	if sig.MaxTokens != 0 {
		cur.MaxTokens = sig.MaxTokens
	}
	if sig.MaxCost != 0 {
		cur.MaxCost = sig.MaxCost
	}
	return cur
}

// CheckLoop is the part of [Check] that looks at the loop alone: an input
// that passed [CheckShape] against where the loop stands (o, nil while a
// step runs) and what is recorded (f). The error wraps ErrInvalid and says
// what would be valid.
func CheckLoop(sig Signal, o *agent.Outcome, f *agent.Facts) error {
	switch sig.Name {
	case SignalApprove, SignalDeny:
		if a, decided := f.Decisions[sig.Marker]; decided {
			if a.Expired {
				return fmt.Errorf("%w %s: marker %s was denied: %s", ErrInvalid, sig.Name, sig.Marker, a.Reason)
			}
			return fmt.Errorf("%w %s: marker %s was already decided", ErrInvalid, sig.Name, sig.Marker)
		}
		var pending []string
		if o != nil && o.Status == agent.StatusAwaitingApproval {
			for _, p := range o.Pending {
				if p.Marker == sig.Marker {
					if sig.Digest != "" && sig.Digest != p.Digest {
						return fmt.Errorf("%w %s", ErrInvalid, agent.DigestMismatch(sig.Name, sig.Marker, sig.Digest, p.Digest))
					}
					return nil
				}
				if _, decided := f.Decisions[p.Marker]; !decided {
					pending = append(pending, p.Marker)
				}
			}
		}
		return fmt.Errorf("%w %s: marker %s is not awaiting approval; pending: %s", ErrInvalid, sig.Name, sig.Marker, listOrNone(pending))
	case SignalReconcile:
		if !f.Indeterminate[sig.Step] {
			return fmt.Errorf("%w reconcile: step %s is not indeterminate; indeterminate: %s", ErrInvalid, sig.Step, listOrNone(sortedKeys(f.Indeterminate)))
		}
		return nil
	case SignalBudget:
		return nil // what it raises is Check's (checkRaise)
	case SignalMessage:
		return checkQueue(sig, f)
	}
	return fmt.Errorf("%w signal %q: want approve, deny, reconcile, budget or message", ErrInvalid, sig.Name)
}

// Limits on the messages a run holds for model steps that have not run
// yet: they are carried in its state (and, on Temporal, its checkpoint)
// until a model step takes them.
const (
	MaxQueuedMessages     = 100
	MaxQueuedMessageBytes = 1 << 20
)

// checkQueue checks that a message fits in the run's queue: the messages
// recorded (f) for model steps without a result, and this one, are at most
// MaxQueuedMessages and MaxQueuedMessageBytes.
func checkQueue(sig Signal, f *agent.Facts) error {
	n, size := 0, 0
	for step, msgs := range f.Messages {
		if _, done := f.Results[step]; done {
			continue
		}
		for _, m := range msgs {
			n++
			size += len(m.Content)
		}
	}
	switch {
	case n+1 > MaxQueuedMessages:
		return fmt.Errorf("%w message: the run already holds %d messages for its next model step; at most %d wait at once: send it once the run has taken them", ErrInvalid, n, MaxQueuedMessages)
	case size+len(sig.Content) > MaxQueuedMessageBytes:
		return fmt.Errorf("%w message: the run already holds %d bytes of messages for its next model step, and this one has %d; at most %d bytes wait at once: send it once the run has taken them", ErrInvalid, size, len(sig.Content), MaxQueuedMessageBytes)
	}
	return nil
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k, v := range m {
		if v {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}
