package local

import (
	"fmt"
	"time"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/ratelimit"

	"github.com/agentrun/agentrun/agent"
)

// Engine drives local runs over the journals in a Store (Drive), operates
// on them (Signal, Cancel, Reconcile) and shows them (Show, Waiting,
// Step). Every step it runs goes through the write guard (journal.Guard).
type Engine struct {
	Store journal.Store
	// Loop is the agent loop the runs follow.
	Loop agent.Loop
	// Now is the clock of approval timeouts and record times. Default nil:
	// time.Now.
	Now func() time.Time
	// Limits is the budget Drive records for a run it starts (zero: the
	// defaults of agent.Budget); a resumed run keeps its recorded budget.
	Limits agent.Budget
	// Probe asks the probe of an interrupted write (journal.Guard.Probe).
	// Default nil: probes are not asked, and such writes wait for a person unless they
	// have an idempotency key.
	Probe journal.ProbeFunc
	// Retry is how Drive retries a model or read step that failed, and says
	// why it stopped when it gives up (the local engine's policy:
	// execute.Retry). Default nil: a failed step ends Drive with its error,
	// and nothing is recorded.
	Retry Retry
	// OnRetry is told of each retry before Drive waits for it (the local
	// driver prints it). Default nil: nobody is told.
	OnRetry func(Retrying)
	// OnLimitWait is told when a model step waits for its rate limit's
	// slot (a wait of ratelimit.NoticeAfter or more; the local driver
	// prints it). It is no failure: the step goes when the slot comes.
	// Default nil: nobody is told.
	OnLimitWait func(LimitWait)
	// Session is how long a run that Drive starts waits Idle for a message
	// after each answer (a session, recorded in its run.started); a
	// resumed run keeps its own. Default 0: the first answer completes
	// the run.
	Session time.Duration
	// Follow makes Drive follow its run: where it waits for a person
	// (AwaitingApproval, Indeterminate, BudgetExceeded) or, a session, for
	// a message (Idle), Drive keeps the run's lock, tells OnWait, and sleeps
	// on a Watch of the journal until a record lands (an operator's
	// signal, a cancel), an approval timeout or the session's idle time
	// passes; then it goes on. A running step learns of a cancel through
	// the same Watch. When ctx ends while it sleeps, Drive returns the
	// outcome it waited in and a *FollowStoppedError. Default false: Drive
	// returns at the first wait.
	Follow bool
	// OnWait is told, when Drive follows, each time the run starts to wait
	// anew (another status, other markers, another answer). Default nil.
	OnWait func(agent.Outcome)
	// Agents gives a call of the named agent tool (agent.ToolSpec.Agent)
	// the loop, executor and system prompt of its child run (AgentsOf; see
	// child.go). Default nil: Drive takes them from its executor when it is
	// an *execute.Executor, and Show, Signal and Cancel see no child run.
	Agents func(name string) (Agent, error)
	// Agent names the agent of the runs Drive starts, recorded in their
	// run.started, for an engine of several agents (package agentrun's
	// Local): a run that records another agent is shown and operated with
	// that agent's loop (Agents), and Drive refuses it. On the engine of a
	// child run it is the child's agent. Default "": the engine's own
	// Loop, the runs of the programs.
	Agent string

	// parentID is, on the engine of a child run, the run that called it,
	// recorded in its run.started.
	parentID string
}

// FollowStoppedError is Drive, following its run, stopped by its context
// while the run waited: the run is as it was (Outcome), and a later Drive
// goes on from there.
type FollowStoppedError struct {
	RunID   string
	Outcome agent.Outcome
	Err     error // the context's error
}

func (e *FollowStoppedError) Error() string {
	return fmt.Sprintf("stopped following run %s (%v); it is %s as it was", e.RunID, e.Err, e.Outcome.Status)
}

// Unwrap returns the context's error.
func (e *FollowStoppedError) Unwrap() error { return e.Err }

// Retry is the policy Drive follows when a model or read step fails
// (execute.Retry is one).
type Retry interface {
	// Attempts is the most attempts of one step in one Drive.
	Attempts() int
	// Next says whether step, whose attempt n (from 1) failed with err,
	// is tried again, and after how long: never a write, never a failure
	// that trying again cannot mend, never past Attempts.
	Next(step agent.Step, n int, err error) (wait time.Duration, again bool)
	// Text says what err was in plain words, without secrets: what the
	// journal records and the driver prints.
	Text(err error) string
}

// Retrying is a failed attempt of a step that Drive tries again after Wait.
type Retrying struct {
	RunID, Step string
	// Attempt is the attempt that failed (from 1), of at most Attempts.
	Attempt, Attempts int
	// Error is its error, in plain words (Retry.Text).
	Error string
	Wait  time.Duration
}

// String says it in one line: "llm/1: attempt 2 of 10 failed:
// NetworkError: connection refused (...); next attempt in 2s".
func (r Retrying) String() string {
	return fmt.Sprintf("%s: attempt %d of %d failed: %s; next attempt in %s", r.Step, r.Attempt, r.Attempts, r.Error, journal.RoundDuration(r.Wait))
}

// LimitWait is a model step of a run waiting for its rate limit.
type LimitWait struct {
	RunID, Step string
	Wait        ratelimit.Wait
}

// String says it in one line: "llm/3: waiting for the openai rate limit,
// next slot in 12 s".
func (w LimitWait) String() string { return w.Step + ": " + w.Wait.String() }

// StoppedError is a run that Drive stopped because a model or read step
// failed on every attempt Retry allowed, or with an error that trying
// again cannot mend: its journal records why (a run.stopped record), and a
// later Drive resumes it. It unwraps to the step's last error.
type StoppedError struct {
	RunID string
	Stop  journal.Stop
	Err   error
}

func (e *StoppedError) Error() string { return "run " + e.RunID + " " + e.Stop.String() }

// Unwrap returns the step's last error.
func (e *StoppedError) Unwrap() error { return e.Err }

func (j *Engine) now() time.Time {
	if j.Now != nil {
		return j.Now().UTC()
	}
	return time.Now().UTC()
}

// guard is the write guard the engine runs its steps through.
func (j *Engine) guard() *journal.Guard {
	return &journal.Guard{Store: j.Store, Now: j.Now, Probe: j.Probe}
}

// maxConflicts bounds how often an operation reloads after journal.ErrConflict.
const maxConflicts = 100
