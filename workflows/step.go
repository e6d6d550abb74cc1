package workflows

import (
	"encoding/json"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/progress"
)

// execute runs one step as an activity and records its result as a fact.
func (r *execution) execute(s agent.Step) error {
	if s.Call != nil && r.state.Fork != nil && r.state.Fork.Replay {
		return r.replayed(s) // an evaluation runs no tool and no agent
	}
	if s.Call != nil && r.isAgent(s.Call.Name) {
		return r.delegate(s)
	}
	r.waitBegan = time.Time{} // a step runs: no wait for a person
	in := stepInput(s, workflow.GetInfo(r.ctx).FirstRunID)
	in.Agent, in.Catalog = r.cat.Agent, r.catKey
	var spec agent.ToolSpec
	if s.Call != nil {
		var listed bool
		spec, listed = r.catalogSpec(s.Call.Name)
		// The spec the run's policy decided the call by, which the worker
		// runs only as its own. The catalog's key covers it (every field
		// of every tool: activities.Binding): a step carries it only when
		// the run has no key, and an activity tool's step, whose local
		// activity prepares the call from it.
		if listed && (r.catKey == "" || spec.Activity != nil) {
			in.Spec = &spec
		}
	}
	if s.Kind == agent.KindWrite && !s.Idempotent {
		r.turn.gen[s.Name]++
		in.Generation = r.turn.gen[s.Name]
	}
	fn := r.names.callTool
	if s.Kind == agent.KindModel {
		fn = r.names.callModel
		in.Stream = r.streaming()
		in.TextInStream = in.Stream
	}
	if s.Settle != nil {
		// The idempotency key of this execution: the same on every attempt
		// and worker, a new one for each retry a person asks for.
		settle := *s.Settle
		settle.Key = agent.IdempotencyKey(in.RunKey, s.Name, in.Generation)
		in.Step.Settle = &settle
	}
	r.event(progress.Event{Type: progress.EventStepStarted, Step: s.Name, Kind: s.Kind})
	streamFrom := r.stream.Offset() // the step's text follows
	opts := stepOptions(s, r.cat, in.Generation)
	r.running, r.runningPolicy, r.stepBegan = s.Name, opts.RetryPolicy, workflow.Now(r.ctx)
	var res json.RawMessage
	var err error
	if spec.Activity != nil {
		res, err = r.scheduled(s, spec, in) // an activity tool: its own activity
	} else {
		res, err = r.call(opts, fn, in)
	}
	r.running = ""
	defer func() { r.state.Retry, r.state.LimitWait = nil, nil }()
	if err == nil && in.TextInStream {
		res, err = r.answerFromStream(s, streamFrom, res)
	}
	if err != nil {
		return r.failed(s, err)
	}
	r.completed(s, in.Generation, res)
	return nil
}

// catalogSpec returns the spec of the named tool in the run's catalog.
func (r *execution) catalogSpec(name string) (agent.ToolSpec, bool) {
	for _, t := range r.cat.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return agent.ToolSpec{}, false
}

// stepInput is the activity input of step s of the run whose first run id
// is runKey. Only a write carries the run key: its guard record and its
// idempotency key name the run, and a model step or a read would carry it
// unread in every history event that schedules it.
func stepInput(s agent.Step, runKey string) activities.StepInput {
	in := activities.StepInput{Step: s}
	if s.Kind == agent.KindWrite {
		in.RunKey = runKey
	}
	return in
}

// call runs the step's activity. When an earlier attempt of the write may
// still be running, it waits until that attempt cannot act and runs it
// again, at most maxFenceWaits times.
func (r *execution) call(opts workflow.ActivityOptions, fn any, in activities.StepInput) (json.RawMessage, error) {
	var res json.RawMessage
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(r.ctx, opts), fn, in).Get(r.ctx, &res)
	for waits := 0; err != nil && r.ctx.Err() == nil && waits < maxFenceWaits; waits++ {
		holder, ok := fencedBy(err)
		if !ok {
			break
		}
		r.waitFence(in.Step.Name, holder)
		if r.ctx.Err() != nil {
			break
		}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(r.ctx, opts), fn, in).Get(r.ctx, &res)
	}
	if r.state.Fence != nil && r.state.Fence.Waiting {
		r.state.Fence = nil
		r.showDetails()
	}
	return res, err
}

// failed records a step whose activity failed with err: a write that may
// have run is Indeterminate (nil: the loop waits for a person); any other
// failure, or a cancel, is returned.
func (r *execution) failed(s agent.Step, err error) error {
	if r.ctx.Err() != nil {
		if s.Kind == agent.KindWrite {
			r.state.InFlight = s.Name
		}
		return err
	}
	if s.Kind == agent.KindWrite && !s.Idempotent && !refused(err) {
		// Whatever stopped it, nobody knows whether the write took effect.
		r.turn.facts.Indeterminate[s.Name] = true
		r.state.Why = indeterminateWhy(err)
		// Until when its last attempt may still act: a person's retry
		// is refused before then (validate).
		r.state.Fence = r.lastAttempt(s, err)
		return nil
	}
	return errors.New(r.failure(s, err))
}

// completed records the result res of step s (execution gen of a write):
// a fact for the loop, a step in the state, its usage, a stream event.
func (r *execution) completed(s agent.Step, gen int, res json.RawMessage) {
	r.turn.facts.Results[s.Name] = res
	r.stepsHere++
	if r.ran = append(r.ran, s.Name); len(r.ran) > recentSteps {
		r.ran = r.ran[1:]
	}
	if s.Kind == agent.KindModel {
		r.turn.asked = workflow.Now(r.ctx) // the approval clocks of the calls it asks for start here
	}
	preview, reply, isReply := summarize(s.Kind, res)
	rec := StepRecord{Name: s.Name, Kind: s.Kind, Generation: gen, Preview: preview}
	if s.Kind == agent.KindWrite {
		if rec.Settled = agent.SettledOf(res); rec.Settled != nil {
			r.settled(rec)
		}
	}
	r.record(rec)
	done := progress.Event{Type: progress.EventStepCompleted, Step: s.Name, Kind: s.Kind, Preview: rec.Preview, Settled: rec.Settled}
	if isReply {
		r.state.Usage = r.state.Usage.Add(reply.Usage)
		done.Attempt = reply.Streamed
		done.Cost = r.state.Usage.Cost
	}
	r.event(done)
}

// maxFenceWaits bounds how often one execution of a write waits for an
// earlier attempt: each wait ends past that attempt's deadline, so a second
// one means the clocks disagree by more than fence.Grace.
const maxFenceWaits = 3

// fencedBy returns the earlier attempt named by an activity failure of
// type activities.ErrTypeFenced.
func fencedBy(err error) (fence.Attempt, bool) {
	var appErr *temporal.ApplicationError
	var holder fence.Attempt
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeFenced || !appErr.HasDetails() {
		return holder, false
	}
	if appErr.Details(&holder) != nil || holder.Until().IsZero() {
		return holder, false
	}
	return holder, true
}

// waitFence shows that the run waits for an earlier attempt of a write
// (state, current details, stream) and waits, on a Temporal timer, until
// that attempt's deadline plus the grace has passed (and a second more:
// the workflow's clock is the server's, the deadline the worker's).
func (r *execution) waitFence(step string, holder fence.Attempt) {
	r.state.Fence = &Fence{Step: step, Attempt: holder.String(), Until: holder.Until(), Waiting: true}
	workflow.GetLogger(r.ctx).Info("waiting for an earlier attempt of a write", "step", step, "holder", holder.String(), "until", operator.FormatUntil(holder.Until()))
	r.showDetails()
	r.event(progress.Event{Type: progress.EventFenceWait, Step: step, Reason: r.state.Fence.String()})
	if left := holder.Until().Add(time.Second).Sub(workflow.Now(r.ctx)); left > 0 {
		_ = timerFor(r.ctx, left, "fence: "+step+" waits for an earlier attempt's deadline").Get(r.ctx, nil)
	}
}

// lastAttempt is the attempt of a write that failed and may still be
// running: the one the guard named, or, when the last attempt timed out
// (its worker froze or was cut off), that attempt, which started before
// now and so ends before now plus its tool's timeout.
func (r *execution) lastAttempt(s agent.Step, err error) *Fence {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeIndeterminate {
		var holder fence.Attempt
		if appErr.HasDetails() && appErr.Details(&holder) == nil && !holder.Until().IsZero() {
			return &Fence{Step: s.Name, Attempt: holder.String(), Until: holder.Until()}
		}
		return nil
	}
	var timeoutErr *temporal.TimeoutError
	if !errors.As(err, &timeoutErr) || s.Call == nil {
		return nil
	}
	t, ok := r.cat.Timeouts[s.Call.Name]
	if !ok || t <= 0 {
		return nil
	}
	return &Fence{Step: s.Name, Attempt: "the last attempt", Until: workflow.Now(r.ctx).Add(t + fence.Grace)}
}

// summarize returns the preview of a step's result and, for a model step
// whose result decodes, the reply (isReply), decoding it once.
func summarize(kind agent.Kind, res json.RawMessage) (preview string, reply agent.ModelReply, isReply bool) {
	if kind != agent.KindModel {
		return agent.Summarize(res), reply, false
	}
	reply, err := agent.DecodeModelReply(res)
	if err != nil {
		return agent.Summarize(res), reply, false
	}
	if preview, ok := agent.SummarizeReply(reply); ok {
		return preview, reply, true
	}
	return agent.Summarize(res), reply, true
}

// streaming reports whether model steps stream their text: as the input
// says, else for sessions.
func (r *execution) streaming() bool {
	if r.in.Stream != nil {
		return *r.in.Stream
	}
	return r.in.Session
}

// settled notes a write settled without a person: the state keeps the
// newest MaxSettled, and the run's details show them.
func (r *execution) settled(rec StepRecord) {
	r.state.Settled = append(r.state.Settled, SettledStep{Step: rec.Name, Settled: *rec.Settled})
	if n := len(r.state.Settled); n > MaxSettled {
		r.state.Settled = append([]SettledStep(nil), r.state.Settled[n-MaxSettled:]...)
	}
	workflow.GetLogger(r.ctx).Info("write settled without a person", "step", rec.Name, "by", rec.Settled.By, "runs", rec.Settled.Runs, "how", logtext.Text(rec.Settled.String()))
}

// refused reports whether the worker refused a step before running it
// (activities.ErrTypeRefused): nothing ran, and the run fails.
func refused(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeRefused
}

func indeterminateWhy(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeIndeterminate {
		return appErr.Message()
	}
	return "the last attempt failed: " + err.Error()
}

// record adds a completed step to the state, which keeps the newest
// MaxSteps of them.
func (r *execution) record(s StepRecord) {
	r.state.StepCount++
	r.state.Steps = append(r.state.Steps, s)
	if n := len(r.state.Steps); n > MaxSteps {
		r.state.Steps = append([]StepRecord(nil), r.state.Steps[n-MaxSteps:]...)
	}
}
