package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
)

// RecordType names a journal record.
type RecordType string

// The record types.
const (
	RunStarted    RecordType = "run.started"    // once, first: the input messages
	StepStarted   RecordType = "step.started"   // before a write that is not idempotent runs: step name and kind
	StepCompleted RecordType = "step.completed" // after the step returns, before its result is used: the result, name and kind
	SignalRecord  RecordType = "signal"         // an operator's approve, deny, reconcile, budget or message
	RunCompleted  RecordType = "run.completed"  // when the loop answers: the final message
	RunCancelled  RecordType = "run.cancelled"  // by an operator's cancel: nothing runs after it
	StepProbed    RecordType = "step.probed"    // a probe's answer about an interrupted write
	RunStopped    RecordType = "run.stopped"    // by a driver that gave up on a failing step: why; a later Drive resumes the run
)

// Record is one entry of a run's journal.
type Record struct {
	Type  RecordType      `json:"type"`
	Input []agent.Message `json:"input,omitempty"` // run.started
	// Budget holds the limits the run started with (absent in older
	// journals: the defaults).
	Budget *agent.Budget `json:"budget,omitempty"` // run.started
	// Session marks a session: after each answer the run waits Idle this
	// long for a message, then completes (absent: not a session).
	Session time.Duration `json:"session,omitempty"` // run.started
	// Agent and Parent mark a child run: the agent tool whose call it
	// runs and the run that called it (absent: a run of its own).
	Agent  string `json:"agent,omitempty"`  // run.started
	Parent string `json:"parent,omitempty"` // run.started
	// Fork marks a fork (agent.Fork): the run it goes on from, where, what
	// it changes, and the state the engine read from the origin's record
	// (absent: a run of its own input). Input is then the origin's input,
	// for people; the fork starts from Fork.Point.Checkpoint.
	Fork *Forked    `json:"fork,omitempty"` // run.started
	Step string     `json:"step,omitempty"` // step.started, step.completed
	Kind agent.Kind `json:"kind,omitempty"` // step.started, step.completed (absent in older journals)
	// Idempotent marks a write step that is safe to run again.
	Idempotent bool `json:"idempotent,omitempty"` // step.started, step.completed
	// Settles marks a write that declares an idempotency key ("key"), a
	// probe ("probe") or both ("key+probe"): an interrupted one is
	// settled without a person when it can be.
	Settles string `json:"settles,omitempty"` // step.started
	// Attempt is the attempt that recorded a write's start: it holds the
	// step until its deadline (absent in older journals: no fence).
	Attempt *fence.Attempt `json:"attempt,omitempty"` // step.started
	// Probe is what the probe of an interrupted write answered.
	Probe  *agent.ProbeAnswer `json:"probe,omitempty"`  // step.probed
	Result json.RawMessage    `json:"result,omitempty"` // step.completed
	// Gates holds, on a model step's step.completed, the policy's decision
	// about each tool call of the reply (allow, approval, deny; read or
	// write) by marker, made once when the model asked: a tools file
	// changed while a call waits does not change how it is gated. Absent
	// in older journals: their calls are decided from the current tools.
	Gates  map[string]agent.Gate `json:"gates,omitempty"`  // step.completed of llm/N
	Signal *operator.Signal      `json:"signal,omitempty"` // signal
	// Stopped is why a driver stopped the run: the step it gave up on,
	// its attempts and the last error.
	Stopped *Stop  `json:"stopped,omitempty"` // run.stopped
	Answer  string `json:"answer,omitempty"`  // run.completed
	// At is when the record was written (step.completed, run.stopped;
	// absent in older journals): a call's approval timeout runs from the
	// step.completed of the model step that asked for it.
	At time.Time `json:"at,omitzero"`
}

// Forked is what the run.started record of a fork holds: the fork as it
// was asked and the point the engine computed from the origin's record
// (hazards and their acknowledgement included; a new system prompt is in
// its checkpoint's conversation, agent.ForkPoint.SetSystem).
type Forked struct {
	Ask   agent.Fork      `json:"ask"`
	Point agent.ForkPoint `json:"point"`
}

// Stop is why a driver stopped a run it could not take further: a model or
// read step failed on every attempt it made (local.Engine.Retry), or with an
// error that trying again cannot mend. The run is not over: a later Drive
// resumes it, and the step's attempts start afresh.
type Stop struct {
	// Step is the step that failed.
	Step string `json:"step"`
	// Attempts is how many attempts of it the driver made.
	Attempts int `json:"attempts"`
	// Over is the time from the first attempt's start to the last
	// one's failure.
	Over time.Duration `json:"over"`
	// Error is the last attempt's error, in plain words.
	Error string `json:"error"`
	// Interrupted is set when the driver did not give up but was stopped
	// (its context ended: Ctrl-C, SIGTERM) while it retried the step.
	Interrupted bool `json:"interrupted,omitempty"`
}

// String says it in one line: "stopped after 3 attempts over 2.1s: llm/1:
// NetworkError: connection refused (...)".
//
// An interrupted driver's: "interrupted after 3 failed attempts over 2.1s:
// llm/1: NetworkError: connection refused (...)".
func (s Stop) String() string {
	if s.Interrupted {
		return fmt.Sprintf("interrupted after %s over %s: %s: %s", plural(s.Attempts, "failed attempt"), RoundDuration(s.Over), s.Step, s.Error)
	}
	return fmt.Sprintf("stopped after %s over %s: %s: %s", plural(s.Attempts, "attempt"), RoundDuration(s.Over), s.Step, s.Error)
}

// plural is "1 attempt", "3 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// RoundDuration rounds d for people: to the millisecond below a second,
// to a tenth of a second below a minute, to the second above.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// Store keeps the journals of runs.
type Store interface {
	// Load returns the records of a run, oldest first; a run with no
	// journal has none (and no error).
	Load(runID string) ([]Record, error)
	// Append adds records to a run's journal after the first seen records.
	// It returns ErrConflict, writing nothing, when the journal no longer
	// holds exactly seen records: the caller loads again and re-decides.
	// An append that returned nil survives a crash; one that returned any
	// other error may or may not have happened.
	Append(runID string, seen int, recs ...Record) error
	// List returns the ids of the runs with a journal, sorted.
	List() ([]string, error)
}

// Errors of the journal.
var (
	// ErrIndeterminate: a write step started and never recorded a result;
	// nobody knows whether it took effect. A person must reconcile it.
	ErrIndeterminate = errors.New("indeterminate")
	// ErrCorrupt: a journal holds a damaged record followed by good ones.
	ErrCorrupt = errors.New("journal is corrupt")
	// ErrConflict: the journal changed between Load and Append.
	ErrConflict = errors.New("journal changed concurrently")
)

// IndeterminateError names the write step whose outcome is unknown. It
// unwraps to ErrIndeterminate.
type IndeterminateError struct {
	Step string
	// Probe is what the write's probe answered, when it has one.
	Probe *agent.ProbeAnswer
	// Holder is the attempt that started it last, when that attempt may
	// still be running: a person's retry waits until it cannot.
	Holder *fence.Attempt
}

func (e *IndeterminateError) Error() string {
	probe := ""
	if e.Probe != nil {
		probe = "; " + e.Probe.String()
	}
	if e.Holder != nil {
		return fmt.Sprintf("step %s is indeterminate: it started and never recorded a result%s; %s: check the world after that, then reconcile it with done RESULT or retry", e.Step, probe, e.Holder.MayRun())
	}
	return fmt.Sprintf("step %s is indeterminate: it started and never recorded a result%s; check the world, then reconcile it with done RESULT or retry", e.Step, probe)
}

// Unwrap returns ErrIndeterminate.
func (e *IndeterminateError) Unwrap() error { return ErrIndeterminate }
