package local

import (
	"slices"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// state is the fold of a run's records.
type state struct {
	started   bool
	input     []agent.Message
	steps     journal.Steps
	gates     map[string]agent.Gate // by marker, as recorded when the model asked
	completed bool
	answer    string
	cancelled bool
	// stopped is why the last driver stopped the run (run.stopped), until
	// a later record shows the run went on.
	stopped *journal.Stop
	// ops is what the signal records set, applied as operator.Target.Apply
	// applies them: the decisions and the user messages by the model step
	// they go to (in its Facts), and the budget (as started, raised by
	// budget signals). A reconciliation is kept by its step instead
	// (journal.StepState.Reconcile): done is recorded as the step's step.completed
	// when the run goes on (the guard), so facts takes no result from ops.
	ops operator.Target
	// session is how long the run waits Idle after an answer (run.started;
	// 0: not a session).
	session time.Duration
	// models is the newest model step recorded: a message goes to the one
	// after it. A message recorded while another process runs model step
	// models+1 goes to that step, which may have been asked without it:
	// send messages to a local run while no process drives it.
	models int
	// expiries are the calls denied because their approval timeout passed,
	// oldest first (their typed signal records).
	expiries []Expired
	// delegated and delegatedUsage are the model calls and tokens of the
	// children of the run's finished agent calls (their children's
	// included), filled by Engine.load (child.go): they count against the
	// run's budget.
	delegated      int
	delegatedUsage agent.Usage
	// fork is, for a fork, what its run.started records: it starts from
	// fork.Point.Checkpoint, with fork.Point.Results as facts (fork.go).
	fork *journal.Forked
}

func fold(recs []journal.Record) *state {
	s := &state{steps: journal.Steps{}, ops: operator.Target{Facts: agent.NewFacts()}}
	for i, r := range recs {
		s.steps.Add(i, r)
		if r.Type != journal.SignalRecord {
			s.stopped = nil // the run went on (or ended) after a stop
		}
		switch r.Type {
		case journal.RunStarted:
			s.started, s.input, s.session = true, r.Input, r.Session
			if r.Budget != nil {
				s.ops.Budget = *r.Budget
			}
			if s.fork = r.Fork; s.fork != nil {
				s.models = s.fork.Point.Base // a message goes to the fork's first live model step
			}
		case journal.StepStarted:
			if n, tool := agent.StepTurn(r.Step); !tool && n > s.models {
				s.models = n
			}
		case journal.StepCompleted:
			for m, g := range r.Gates {
				if s.gates == nil {
					s.gates = map[string]agent.Gate{}
				}
				s.gates[m] = g
			}
			if n, tool := agent.StepTurn(r.Step); !tool && n > s.models {
				s.models = n // model steps have no step.started record
			}
		case journal.SignalRecord:
			if r.Signal == nil {
				continue
			}
			s.ops.Models = s.models
			sig := operator.ReadOldDeny(*r.Signal) // an old journal's expiry is read as one
			if sig.Expired {
				s.expiries = append(s.expiries, Expired{Marker: sig.Marker, Reason: sig.Reason})
			}
			s.ops.Apply(sig)
		case journal.RunCompleted:
			s.completed, s.answer = true, r.Answer
		case journal.RunCancelled:
			s.cancelled = true
		case journal.RunStopped:
			s.stopped = r.Stopped
		}
	}
	return s
}

// closed returns the status of a run that ended, "" while it goes on.
func (s *state) closed() agent.Status {
	switch {
	case s.completed:
		return agent.StatusCompleted
	case s.cancelled:
		return agent.StatusCancelled
	}
	return ""
}

// cancelledOutcome is the outcome of a cancelled run: it names a write
// that started and has no result, as it may have taken effect.
func (s *state) cancelledOutcome() agent.Outcome {
	var open []string
	for name, st := range s.steps {
		if st.Starts > 0 && !st.Completed && st.Kind == agent.KindWrite && !st.Idempotent && st.Reconcile == nil {
			open = append(open, name)
		}
	}
	slices.Sort(open)
	return agent.Outcome{Status: agent.StatusCancelled, Reason: agent.CancelledReason(strings.Join(open, ", "))}
}

// expiry is the approval clocks of the calls pending in o (operator.Expiry):
// each starts at the step.completed of the model step that asked for the
// call (none in older journals: those calls never expire).
func (s *state) expiry(o *agent.Outcome) operator.Expiry {
	return operator.Expiry{Outcome: o, Facts: s.ops.Facts, Asked: func(marker string) time.Time {
		n, _ := agent.StepTurn(marker)
		if model := s.steps[agent.ModelStep(n)]; model != nil {
			return model.At
		}
		return time.Time{}
	}}
}

// expired returns the denials of the calls pending in o whose approval
// timeout has passed at now.
func (s *state) expired(o *agent.Outcome, now time.Time) []operator.Signal {
	var out []operator.Signal
	for _, p := range s.expiry(o).Expired(now) {
		out = append(out, operator.ExpiredDeny(p))
	}
	return out
}

// facts turns the fold into the loop's facts.
func (s *state) facts() *agent.Facts {
	f := agent.NewFacts()
	if s.fork != nil {
		for name, res := range s.fork.Point.Results { // the origin's, kept past the checkpoint
			f.Results[name] = res
		}
	}
	for name, st := range s.steps {
		switch {
		case st.Completed:
			f.Results[name] = st.Result
		case waitsForPerson(st):
			f.Indeterminate[name] = true
		}
	}
	for m, a := range s.ops.Facts.Decisions {
		f.Decisions[m] = a
	}
	f.Gates = s.gates
	for at, msgs := range s.ops.Facts.Messages {
		f.Messages[at] = slices.Clone(msgs)
	}
	return f
}

// waitsForPerson reports whether the step is a write that started, never
// recorded its result, was not reconciled, and cannot be settled without a
// person: it declares no key and no probe, or its probe answered unknown
// and it has no key. A write that can be settled is run again by the loop,
// and the guard settles it.
func waitsForPerson(st *journal.StepState) bool {
	if st.Completed || st.Starts == 0 || st.Kind != agent.KindWrite || st.Idempotent || st.Reconcile != nil {
		return false
	}
	switch st.Settles {
	case "key", "key+probe":
		return false
	case "probe":
		return st.Probed != nil && st.Probed.Verdict == agent.ProbeUnknown
	}
	return true
}

// idleUntil is when a session that answered stops waiting for a message:
// its idle time after the answer's step.completed (zero when that record
// has no time).
func (s *state) idleUntil() time.Time {
	if st := s.steps[agent.ModelStep(s.models)]; st != nil && !st.At.IsZero() {
		return st.At.Add(s.session)
	}
	return time.Time{}
}

// usage returns the model calls the run made and the tokens they used.
func (s *state) usage() (turns int, u agent.Usage) {
	for name, st := range s.steps {
		if n, tool := agent.StepTurn(name); st.Completed && n > 0 && !tool {
			turns++
			if reply, err := agent.DecodeModelReply(st.Result); err == nil {
				u = u.Add(reply.Usage)
			}
		}
	}
	return turns, u
}

// decide is where the loop stands over the fold, under the run's budget. A
// session that answered is Idle until its idle time passed after the
// answer's record (idleUntil); then it is Completed.
func (j *Engine) decide(s *state) agent.Decision {
	_, used := s.usage()
	// A fork's budget counts its own model calls: the checkpoint's turn
	// less the origin's calls before the fork point (its Base).
	d := s.ops.Budget.LimitTree(j.loopOf(s).Next(s.start(), s.facts()), s.delegated-s.base(), used.Add(s.delegatedUsage), j.isAgent)
	if o := d.Outcome; o != nil && o.Status == agent.StatusCompleted && s.session > 0 {
		if until := s.idleUntil(); until.IsZero() || j.now().Before(until) {
			idle := *o
			idle.Status = agent.StatusIdle
			d.Outcome = &idle
		}
	}
	if o := d.Outcome; o != nil && o.Status == agent.StatusIndeterminate && o.Reason == "" {
		if st := s.steps[o.Step]; st != nil && st.Probed != nil {
			o.Reason = st.Probed.String() // what its probe answered, for the person
		}
	}
	return d
}
