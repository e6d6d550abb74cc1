package cli

import (
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/local"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitSettings: a setting cannot be used (a *config.Error, one line
	// naming the variable), or a sealed journal record whose key is not
	// among the configured ones (a *journal.KeyError). The same code as a
	// usage error.
	ExitSettings         = 2
	ExitAwaitingApproval = 3
	ExitIndeterminate    = 4
	// ExitBusy: another process drives the run (--local); nothing was
	// written. Also a driver that lost its lock of the run (its
	// PostgreSQL connection ended) and stopped before its next step.
	ExitBusy = 5
	// ExitCancelled: the run was cancelled.
	ExitCancelled = 6
	// ExitBudgetExceeded: the run stopped at one of its limits.
	ExitBudgetExceeded = 7
	// ExitStopped: the local driver stopped the run because a model call
	// or read failed on every attempt (or with an error that trying again
	// cannot mend); its journal says why, and starter --local --id RUN
	// resumes it (a *local.StoppedError).
	ExitStopped = 8
)

// UsageError is a command line that cannot be run.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// OutcomeError reports a run that stopped without completing; its exit code
// says why.
type OutcomeError struct{ Outcome agent.Outcome }

func (e *OutcomeError) Error() string {
	switch e.Outcome.Status {
	case agent.StatusFailed:
		return "run failed: " + e.Outcome.Reason
	case agent.StatusIndeterminate:
		return "run is Indeterminate at " + e.Outcome.Step
	case agent.StatusCancelled:
		return "run " + e.Outcome.Reason
	case agent.StatusBudgetExceeded:
		return "run is BudgetExceeded: " + e.Outcome.Reason
	}
	return "run is " + string(e.Outcome.Status)
}

// ExitCode maps an error from this package to a process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	var se *config.Error
	var ke *journal.KeyError
	if errors.As(err, &se) || errors.As(err, &ke) { // a sealed journal's key is a setting
		return ExitSettings
	}
	if errors.Is(err, journal.ErrBusy) || errors.Is(err, journal.ErrLockLost) {
		return ExitBusy
	}
	var stopped *local.StoppedError
	if errors.As(err, &stopped) {
		return ExitStopped
	}
	var oe *OutcomeError
	if errors.As(err, &oe) {
		switch oe.Outcome.Status {
		case agent.StatusAwaitingApproval:
			return ExitAwaitingApproval
		case agent.StatusIndeterminate:
			return ExitIndeterminate
		case agent.StatusCancelled:
			return ExitCancelled
		case agent.StatusBudgetExceeded:
			return ExitBudgetExceeded
		case agent.StatusCompleted:
			return ExitOK
		}
	}
	return ExitError
}

// outcomeErr turns an outcome into the error that carries its exit code,
// nil for Completed.
func outcomeErr(o agent.Outcome) error {
	if o.Status == agent.StatusCompleted || o.Status == agent.StatusIdle {
		return nil // an Idle session answered: it waits for a message, not for us
	}
	return &OutcomeError{Outcome: o}
}
