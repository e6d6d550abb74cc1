package journal

import (
	"encoding/json"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
)

// StepState is what a run's records say about one of its steps: the
// guard decides from it, and the local engine's fold of the whole run
// keeps one per step.
type StepState struct {
	Kind       agent.Kind // from its step.started or step.completed records
	Idempotent bool
	Starts     int // how many step.started records it has (a write's generation)
	Completed  bool
	Result     json.RawMessage
	At         time.Time          // when its step.completed was written, if known
	Reconcile  *operator.Signal   // the reconciliation of the latest start, if any
	Settles    string             // the Settles mark of its latest start
	Probed     *agent.ProbeAnswer // the probe's answer since its latest start, if any
	Retries    int                // how often a person said retry: its generation is one more
	Holder     *fence.Attempt     // the attempt of its latest start, if recorded
	StartSeq   int                // the index of its latest step.started record
}

// Steps is the fold of a run's step records, by step name.
type Steps map[string]*StepState

// FoldSteps folds the step records of a run's records.
func FoldSteps(recs []Record) Steps {
	s := Steps{}
	for i, r := range recs {
		s.Add(i, r)
	}
	return s
}

// step returns the state of the named step, new when it has none yet.
func (s Steps) step(name string) *StepState {
	st := s[name]
	if st == nil {
		st = &StepState{}
		s[name] = st
	}
	return st
}

// Add folds record i of the run into the steps: its step.started,
// step.completed and step.probed records, and the reconciliations of its
// signal records. Other records change nothing.
func (s Steps) Add(i int, r Record) {
	switch r.Type {
	case StepStarted:
		st := s.step(r.Step)
		st.Kind, st.Idempotent, st.Settles = r.Kind, r.Idempotent, r.Settles
		st.Starts++
		st.Probed = nil
		st.Holder, st.StartSeq = r.Attempt, i
		st.Reconcile = nil
	case StepCompleted:
		st := s.step(r.Step)
		st.Completed, st.Result, st.At = true, r.Result, r.At
		if r.Kind != "" { // journals from before step.completed carried the kind have it in step.started only
			st.Kind, st.Idempotent = r.Kind, r.Idempotent
		}
	case StepProbed:
		s.step(r.Step).Probed = r.Probe
	case SignalRecord:
		if r.Signal == nil || r.Signal.Name != operator.SignalReconcile {
			return
		}
		sig := *r.Signal
		st := s.step(sig.Step)
		st.Reconcile = &sig
		if sig.Outcome == operator.OutcomeRetry {
			st.Retries++
		}
	}
}
