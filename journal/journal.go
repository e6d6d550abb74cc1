package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// Journal applies the decision table of RunStep to the runs in a Store and
// drives local runs (Run, Signal, Show).
type Journal struct {
	Store Store
	// Loop is the agent loop local runs follow; RunStep does not use it.
	Loop agent.Loop
}

// maxConflicts bounds how often an operation reloads after ErrConflict.
const maxConflicts = 100

// StepFunc executes a step and returns its result.
type StepFunc func(ctx context.Context) (json.RawMessage, error)

// RunStep executes step at most as often as the decision table allows:
//
//	completed                                    -> the recorded result; fn is not called
//	started, not completed, write, reconciled done  -> the person's result, recorded as completed
//	started, not completed, write, reconciled retry -> run once more
//	started, not completed, write, not reconciled   -> *IndeterminateError
//	otherwise                                    -> record start, call fn, record result
//
// A write marked Idempotent is safe to run again and follows "otherwise".
// An fn error is returned and not recorded. An error from the store means
// the record may or may not have been written.
func (j *Journal) RunStep(ctx context.Context, runID string, step agent.Step, fn StepFunc) (json.RawMessage, error) {
	if err := ValidRunID(runID); err != nil {
		return nil, err
	}
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		st := fold(recs).steps[step.Name]
		if st != nil && st.completed {
			return st.result, nil
		}
		if st != nil && st.starts > 0 && st.kind == agent.KindWrite && !st.idempotent {
			switch {
			case st.reconcile == nil:
				return nil, &IndeterminateError{Step: step.Name}
			case st.reconcile.Outcome == OutcomeDone:
				res := agent.ReconciledResult(st.reconcile.Result)
				err := j.Store.Append(runID, len(recs), Record{Type: StepCompleted, Step: step.Name, Result: res})
				if errors.Is(err, ErrConflict) {
					continue
				}
				if err != nil {
					return nil, err
				}
				return res, nil
			}
			// reconciled retry: run it once more, under a new start record
		}
		err = j.Store.Append(runID, len(recs), Record{Type: StepStarted, Step: step.Name, Kind: step.Kind, Idempotent: step.Idempotent})
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return j.complete(runID, step.Name, res)
	}
	return nil, fmt.Errorf("run step %s of %s: %w %d times", step.Name, runID, ErrConflict, maxConflicts)
}

// complete records the result of a step that ran.
func (j *Journal) complete(runID, step string, res json.RawMessage) (json.RawMessage, error) {
	for range maxConflicts {
		recs, err := j.Store.Load(runID)
		if err != nil {
			return nil, err
		}
		if st := fold(recs).steps[step]; st != nil && st.completed {
			return st.result, nil // settled by someone else meanwhile
		}
		err = j.Store.Append(runID, len(recs), Record{Type: StepCompleted, Step: step, Result: res})
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	return nil, fmt.Errorf("record result of %s in %s: %w %d times", step, runID, ErrConflict, maxConflicts)
}

// stepState is what the journal knows about one step.
type stepState struct {
	kind       agent.Kind
	idempotent bool
	starts     int // how many times the step started (its generation)
	completed  bool
	result     json.RawMessage
	reconcile  *Signal // the reconciliation of the latest start, if any
}

// state is the fold of a run's records.
type state struct {
	started   bool
	input     []agent.Message
	steps     map[string]*stepState
	decisions map[string]agent.Approval
	completed bool
	answer    string
}

func fold(recs []Record) *state {
	s := &state{steps: map[string]*stepState{}, decisions: map[string]agent.Approval{}}
	step := func(name string) *stepState {
		st := s.steps[name]
		if st == nil {
			st = &stepState{}
			s.steps[name] = st
		}
		return st
	}
	for _, r := range recs {
		switch r.Type {
		case RunStarted:
			s.started, s.input = true, r.Input
		case StepStarted:
			st := step(r.Step)
			st.kind, st.idempotent = r.Kind, r.Idempotent
			st.starts++
			st.reconcile = nil
		case StepCompleted:
			st := step(r.Step)
			st.completed, st.result = true, r.Result
		case SignalRecord:
			if r.Signal == nil {
				continue
			}
			switch r.Signal.Name {
			case SignalApprove:
				s.decisions[r.Signal.Marker] = agent.Approval{Approved: true}
			case SignalDeny:
				s.decisions[r.Signal.Marker] = agent.Approval{Reason: r.Signal.Reason}
			case SignalReconcile:
				sig := *r.Signal
				step(r.Signal.Step).reconcile = &sig
			}
		case RunCompleted:
			s.completed, s.answer = true, r.Answer
		}
	}
	return s
}

// facts turns the fold into the loop's facts.
func (s *state) facts() *agent.Facts {
	f := agent.NewFacts()
	for name, st := range s.steps {
		switch {
		case st.completed:
			f.Results[name] = st.result
		case st.starts > 0 && st.kind == agent.KindWrite && !st.idempotent && st.reconcile == nil:
			f.Indeterminate[name] = true
		}
	}
	for m, a := range s.decisions {
		f.Decisions[m] = a
	}
	return f
}

// sameInput reports whether two inputs are the same messages.
func sameInput(a, b []agent.Message) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
