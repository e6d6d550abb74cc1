package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// StepInfo is one step of a run as Show reports it.
type StepInfo struct {
	Name   string     `json:"name"`
	Kind   agent.Kind `json:"kind"`
	State  string     `json:"state"` // "completed", "started" or "reconciled"
	Starts int        `json:"starts"`
	Result string     `json:"result,omitempty"`
	// Settled says how an interrupted write was settled without a person.
	Settled *agent.Settled `json:"settled,omitempty"`
	// Replayed is, in a replay fork, the origin's step whose result the
	// call got (agent.ToolResult.Replayed; agent.ReplayedNone for a call
	// the origin never made): no tool ran.
	Replayed string `json:"replayed,omitempty"`
}

// RunInfo is a run as Show reports it.
type RunInfo struct {
	RunID         string          `json:"run_id"`
	Status        agent.Status    `json:"status"`
	Pending       []agent.Pending `json:"pending,omitempty"`
	Indeterminate string          `json:"indeterminate,omitempty"`
	// Probe is what the Indeterminate write's probe answered, if it has one.
	Probe  *agent.ProbeAnswer `json:"probe,omitempty"`
	Answer string             `json:"answer,omitempty"`
	CutOff bool               `json:"cut_off,omitempty"` // the answer was cut off by the model's length limit
	Empty  bool               `json:"empty,omitempty"`   // the answer has no text: the model returned nothing
	Reason string             `json:"reason,omitempty"`
	// Budget is the run's limits; Turns and Usage what it used of them.
	Budget  agent.Budget `json:"budget"`
	Turns   int          `json:"turns"`
	Usage   agent.Usage  `json:"usage"`
	Steps   []StepInfo   `json:"steps"`
	Records int          `json:"records"`
	// Stopped is why the last driver of a Running run stopped it (Drive's
	// Retry gave up on a step): resume it with Drive.
	Stopped *journal.Stop `json:"stopped,omitempty"`
	// Expired are the calls denied because nobody decided them within
	// their tool's approval timeout, oldest first.
	Expired []Expired `json:"expired,omitempty"`
	// Child is the child run of the agent call the run is at (child.go):
	// while it waits for a person, so does the run, and Status, Pending,
	// Indeterminate and Reason are its. Turns and Usage count the model
	// calls of the run's child runs with its own.
	Child *ChildInfo `json:"child,omitempty"`
	// Agent and Parent are, for a child run, its agent and the run that
	// called it.
	Agent  string `json:"agent,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Fork is, for a fork, its lineage: the origin, the fork point, what
	// it changes, the writes acknowledged (its run.started). Steps and
	// Turns are its own: those before the fork point are the origin's.
	Fork *journal.Forked `json:"fork,omitempty"`
}

// Expired is a call denied because its approval timed out, with the
// reason the model read ("approval expired after 30m0s").
type Expired struct {
	Marker string `json:"marker"`
	Reason string `json:"reason"`
}

// Show reports a run's status, what it waits for, and its steps in the
// order they first appear in a step.started or step.completed record. A
// step's Starts counts its step.started records: 0 for a model or read
// step, which is recorded only once it completed.
func (j *Engine) Show(runID string) (RunInfo, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return RunInfo{}, err
	}
	recs, err := j.Store.Load(runID)
	if err != nil {
		return RunInfo{}, err
	}
	return j.ShowRecords(runID, recs)
}

// ShowRecords is Show of the run runID as the records recs, the first
// len(recs) of its journal, have it: where it stood when the last of them
// was written, but for what is read elsewhere as it is now (the time, its
// child runs' journals). A subscriber (agentrun.LocalRun.Subscribe) reads
// the run's status after each record with it.
func (j *Engine) ShowRecords(runID string, recs []journal.Record) (RunInfo, error) {
	if e, err := j.ofRecords(runID, recs); err != nil || e != j {
		if err != nil {
			return RunInfo{}, err
		}
		return e.ShowRecords(runID, recs) // a child run, with its agent's loop
	}
	st := fold(recs)
	j.delegations(runID, st)
	if !st.started {
		return RunInfo{}, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
	}
	info := RunInfo{RunID: runID, Records: len(recs), Status: agent.StatusCompleted, Answer: st.answer, Budget: st.ops.Budget.WithDefaults(), Agent: j.Agent, Parent: j.parentID}
	info.Turns, info.Usage = st.usage()
	info.Turns, info.Usage = info.Turns+st.delegated, info.Usage.Add(st.delegatedUsage)
	info.Expired = st.expiries
	info.Fork = st.fork
	switch {
	case st.completed:
		o := j.final(st)
		info.CutOff, info.Empty = o.CutOff, o.Empty
	case st.cancelled:
		o := st.cancelledOutcome()
		info.Status, info.Reason = o.Status, o.Reason
	default:
		d := j.decide(st)
		info.Status = agent.StatusRunning
		o, child := j.waitsOnChild(runID, d)
		if child != nil {
			info.Child = &ChildInfo{Agent: d.Step.Call.Name, RunID: child.RunID, Status: child.Status}
			info.Turns, info.Usage = info.Turns+child.Turns, info.Usage.Add(child.Usage)
		}
		switch {
		case o != nil:
			// The child waits for a person: so does the run, as the child
			// says (its probe and holder included).
			info.Status, info.Pending, info.Indeterminate, info.Reason, info.Probe = o.Status, o.Pending, o.Step, o.Reason, child.Probe
		case d.Outcome != nil:
			o := d.Outcome
			info.Status, info.Pending, info.Indeterminate, info.Answer, info.Reason = o.Status, o.Pending, o.Step, o.Answer, o.Reason
			if ss := st.steps[o.Step]; ss != nil && o.Status == agent.StatusIndeterminate {
				info.Probe = ss.Probed
				if ss.Holder.Holds(j.now()) {
					// Its attempt may still act: a retry is refused until then.
					info.Reason = strings.TrimPrefix(info.Reason+"; "+ss.Holder.MayRun()+"; a retry is refused until then", "; ")
				}
			}
			if o.Status == agent.StatusCompleted {
				info.Status = agent.StatusRunning // answered, not yet recorded: the next run records it
			}
		}
		if info.Status == agent.StatusRunning {
			info.Stopped = st.stopped
			if child != nil && child.Stopped != nil {
				info.Stopped = child.Stopped // its child's driver (this run's) stopped it: resume this run
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Type != journal.StepStarted && r.Type != journal.StepCompleted || seen[r.Step] {
			continue
		}
		seen[r.Step] = true
		s := st.steps[r.Step]
		si := StepInfo{Name: r.Step, Kind: s.Kind, Starts: s.Starts, State: "started"}
		if s.Completed {
			si.State, si.Result = "completed", agent.Summarize(s.Result)
			if s.Kind == agent.KindWrite {
				si.Settled = agent.SettledOf(s.Result)
			}
			if s.Kind != agent.KindModel && st.replay() {
				if r, err := agent.DecodeToolResult(s.Result); err == nil {
					si.Replayed = r.Replayed
				}
			}
		} else if s.Reconcile != nil {
			si.State = "reconciled " + s.Reconcile.Outcome
		}
		info.Steps = append(info.Steps, si)
	}
	return info, nil
}

// final returns the outcome the recorded replies of a completed run lead
// to, for its flags: whether the final answer was cut off by the model's
// length limit (CutOff), whether it has no text (Empty).
func (j *Engine) final(st *state) agent.Outcome {
	l := j.loopOf(st)
	l.FailOnCut, l.FailOnEmpty = false, false
	if o := l.Next(st.start(), st.facts()).Outcome; o != nil {
		return *o
	}
	return agent.Outcome{}
}

// Waiting returns the runs that wait on a person: AwaitingApproval,
// Indeterminate or BudgetExceeded, and Running runs whose driver stopped
// them (RunInfo.Stopped: someone must resume them). A run it cannot read
// is an *UnreadError in the error (joined), beside the runs it could.
func (j *Engine) Waiting() ([]RunInfo, error) {
	ids, err := j.Store.List()
	if err != nil {
		return nil, err
	}
	var out []RunInfo
	var unread []error
	for _, id := range ids {
		info, err := j.Show(id)
		if errors.Is(err, operator.ErrUnknownRun) {
			continue
		}
		if err != nil {
			// One run that cannot be read (a missing key, a damaged
			// record) hides none of the others.
			unread = append(unread, &UnreadError{RunID: id, Err: err})
			continue
		}
		if operator.WaitsOnPerson(info.Status) || info.Stopped != nil {
			out = append(out, info)
		}
	}
	return out, errors.Join(unread...)
}

// UnreadError is a run that Waiting could not read; Waiting returns the
// others all the same.
type UnreadError struct {
	RunID string
	Err   error
}

func (e *UnreadError) Error() string { return fmt.Sprintf("run %s: %v", e.RunID, e.Err) }
func (e *UnreadError) Unwrap() error { return e.Err }

// Reconcile settles an indeterminate write step: outcome "done" records
// result as the step's result (the tool never runs again), "retry" lets
// the step run once more. It is Signal with a reconcile payload.
func (j *Engine) Reconcile(ctx context.Context, runID, step, outcome, result string) error {
	return j.Signal(ctx, runID, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: outcome, Result: result})
}

// Step returns a step of a run as the loop executes it, with its input,
// and its recorded result (nil when it has none yet). An unknown run wraps
// operator.ErrUnknownRun; a step the run never reached wraps operator.ErrInvalid.
func (j *Engine) Step(runID, name string) (agent.Step, json.RawMessage, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return agent.Step{}, nil, err
	}
	if e, err := j.of(runID); err != nil || e != j {
		if err != nil {
			return agent.Step{}, nil, err
		}
		return e.Step(runID, name) // a child run, with its agent's loop
	}
	_, st, err := j.load(runID)
	if err != nil {
		return agent.Step{}, nil, err
	}
	if !st.started {
		return agent.Step{}, nil, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
	}
	facts := st.facts()
	step, ok := j.loopOf(st).Find(st.start(), facts, name)
	if !ok {
		if c, child := j.current(runID, j.decide(st)); child != nil {
			return c.Step(child.RunID, name) // a step of the child run the run is at
		}
		return agent.Step{}, nil, fmt.Errorf("%w step %s: run %s has not reached it", operator.ErrInvalid, name, runID)
	}
	return step, facts.Results[name], nil
}
