package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/progress"
)

// decodeOperator decodes and checks the shape of an operator's payload, as
// a Temporal client sent it: JSON (operator.Decode). It never panics and
// does not look at the run's state.
func decodeOperator(name string, raw converter.RawValue) (operator.Signal, error) {
	want := operator.Format(name)
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		return operator.Signal{}, fmt.Errorf("%s has no payload; want %s", name, want)
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return operator.Signal{}, fmt.Errorf("%s payload has encoding %q; want JSON like %s", name, enc, want)
	}
	return operator.Decode(name, p.GetData())
}

// operatorSignals are operator.Signals, and signalDescriptions and
// updateDescriptions the descriptions of their signal channels and updates
// (in that order): built once for every run, since the sdk keeps what a run
// registers for as long as the run stays in the worker's cache. Built per
// run, these strings took some 0.9 KB of every parked run's heap.
var (
	operatorSignals    = operator.Signals()
	signalDescriptions = describe(operatorSignals, func(name string) string { return "payload " + operator.Format(name) })
	updateDescriptions = describe(operatorSignals, func(name string) string {
		return "the " + name + " operator signal, answered with the state once the run acted on it (its steps, refusals and answer: the state query)"
	})
)

func describe(names []string, of func(name string) string) []string {
	out := make([]string, len(names))
	for i, name := range names {
		out[i] = of(name)
	}
	return out
}

// setHandlers registers the state query, the operator signals and the
// operator updates.
func (r *execution) setHandlers() error {
	if err := workflow.SetQueryHandlerWithOptions(r.ctx, QueryState, func() (State, error) { return r.state, nil },
		workflow.QueryHandlerOptions{Description: "where the run stands: status, pending markers, the indeterminate step, steps, usage, rejected inputs"}); err != nil {
		return err
	}
	r.startSharing() // before any input: a budget sent to a child may be refused
	names := operatorSignals
	chans := make([]workflow.ReceiveChannel, len(names))
	for i, name := range names {
		chans[i] = workflow.GetSignalChannelWithOptions(r.ctx, name, workflow.SignalChannelOptions{Description: signalDescriptions[i]})
		err := workflow.SetUpdateHandlerWithOptions(r.ctx, name,
			func(ctx workflow.Context, raw converter.RawValue) (State, error) {
				sig, err := r.validate(name, raw)
				if err != nil {
					return r.state.Brief(), err // the validator already refused it; unreachable in practice
				}
				waiting := r.outcome != nil
				if r.forwardTo(sig) != nil {
					// It goes to the child run: answer once the child said
					// where it goes (or ended), within forwardWait.
					reports := r.childReports
					r.apply(sig)
					if r.v.of(ctx, versionForwardAnswer) >= 1 {
						_, _ = awaitFor(ctx, forwardWait, "forwarded to the child run: waits for its report", func() bool {
							return r.childReports > reports || r.delegating == nil || r.inputs.closing
						})
					}
					return r.state.Brief(), nil
				}
				r.traceAnswer(sig, tracing.ByUpdate)
				r.apply(sig)
				// Runs recorded before answers waited answered at once: the
				// version keeps their command order on replay.
				if waiting && r.v.of(ctx, versionUpdateAnswer) >= 1 {
					// The run waits on a person: answer with where it goes
					// once the loop has acted on this input.
					mine := r.inputs.changes
					_ = workflow.Await(ctx, func() bool { return r.inputs.acted >= mine || r.inputs.closing })
				}
				return r.state.Brief(), nil
			},
			workflow.UpdateHandlerOptions{
				Validator: func(ctx workflow.Context, raw converter.RawValue) error {
					_, err := r.validate(name, raw)
					return err
				},
				Description: updateDescriptions[i],
			})
		if err != nil {
			return err
		}
	}
	r.children = workflow.GetSignalChannelWithOptions(r.ctx, SignalChild, workflow.SignalChannelOptions{Description: "sent by the run's child run with where it stands; shown, never acted on"})
	r.shares = workflow.GetSignalChannelWithOptions(r.ctx, SignalShare, workflow.SignalChannelOptions{Description: "sent by the run's parent when its budget was raised: the run, a child, reads its share from its parent"})
	r.retries = workflow.GetSignalChannelWithOptions(r.ctx, activities.RetrySignal, workflow.SignalChannelOptions{Description: "sent by a step's own activity while the server retries it; shown, never acted on"})
	workflow.Go(r.ctx, func(ctx workflow.Context) { r.takeSignals(ctx, names, chans) })
	return nil
}

// takeSignals handles the signals in one coroutine (the sdk resumes every
// coroutine at each step of a workflow task, so each costs time): the
// stream's publish signals, the steps' retry notices, those under names
// the run does not handle (until it is cancelled), then the operator
// signals by name in operator.Signals order, each in arrival order.
// Stream and operator signals are taken after a cancel too: the run serves
// its stream while it closes and records operator signals as rejected.
//
// It waits for a channel to hold a signal instead of a blocking Receive,
// which would take a signal arriving in the task that continues as new out
// of the channel before continueAsNew could carry it.
func (r *execution) takeSignals(ctx workflow.Context, names []string, chans []workflow.ReceiveChannel) {
	w := unknownWatch{ctx: ctx}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for {
		_ = workflow.Await(dctx, func() bool {
			unknown := w.found() // first: it is current after every wait
			return unknown || r.stream.Pending() || r.retries.Len() > 0 || r.children.Len() > 0 || r.shares.Len() > 0 || slices.ContainsFunc(chans, func(ch workflow.ReceiveChannel) bool { return ch.Len() > 0 })
		})
		r.stream.Receive()
		drainSignals(r.retries, r.retrying)
		drainSignals(r.children, r.childReport)
		drainSignals(r.shares, r.ringShare)
		if len(w.unknown) > 0 {
			r.rejectUnknown(ctx, w.unknown)
		}
		for i, ch := range chans {
			drainSignals(ch, func(raw converter.RawValue) { r.operate(names[i], raw) })
		}
	}
}

// unknownWatch looks for signals sent under names the run does not handle
// (a misspelled "aprove"). The sdk has no handler for any name: they are
// the names GetUnhandledSignalNames lists that are not operator signals.
// The watch ends, for good, the first time it finds none once the run was
// cancelled: a cancelled run takes no more input.
type unknownWatch struct {
	ctx     workflow.Context
	ended   bool
	unknown []string // what found found last, sorted
}

// found reports whether there are signals under unknown names.
func (w *unknownWatch) found() bool {
	w.unknown = nil
	if w.ended {
		return false
	}
	w.unknown = unknownSignals(workflow.GetUnhandledSignalNames(w.ctx))
	w.ended = len(w.unknown) == 0 && w.ctx.Err() != nil
	return len(w.unknown) > 0
}

// rejectUnknown records every signal under the unknown names as rejected,
// naming the valid ones. It only renders the current details: it adds no
// command, so histories recorded before it replay unchanged.
func (r *execution) rejectUnknown(ctx workflow.Context, unknown []string) {
	for _, name := range unknown {
		drainSignals(workflow.GetSignalChannel(ctx, name), func(raw converter.RawValue) {
			r.reject(name, raw, fmt.Errorf("unknown signal %q; the valid signals are %s", name, strings.Join(operator.Signals(), ", ")))
		})
	}
	r.showDetails()
}

// drainSignals hands every signal already delivered on ch to handle, in
// the order they arrived, without waiting (ReceiveAsync): the one way the
// run takes signals, so that none is left behind when it continues as new.
func drainSignals(ch workflow.ReceiveChannel, handle func(raw converter.RawValue)) {
	for {
		var raw converter.RawValue // a RawValue always decodes
		if !ch.ReceiveAsync(&raw) {
			return
		}
		handle(raw)
	}
}

// operate handles a signal: apply it, or record why it was rejected.
func (r *execution) operate(name string, raw converter.RawValue) {
	sig, err := r.validate(name, raw)
	if err != nil {
		if name == operator.SignalBudget && r.sharing != nil {
			r.sharing.bell.rung = true // a parent on the old path shares this way
		}
		if r.reject(name, raw, err) {
			r.showDetails()
			return
		}
		r.publish()
		return
	}
	r.traceAnswer(sig, tracing.BySignal)
	r.apply(sig)
}

// reject records an operator signal the run refused, for the state query
// and the current details. It reports whether the refusal is quiet (see
// rejected).
func (r *execution) reject(name string, raw converter.RawValue, err error) (quiet bool) {
	payload := ""
	if p := raw.Payload(); p != nil {
		payload = clip(string(p.GetData()), 500)
	}
	return r.rejected(name, payload, err.Error())
}

// rejected records a signal the run refused: in the state, the current
// details (when the caller publishes) and the stream. Past QuietRejects
// refusals in a row it is quiet: no stream item, and the caller only
// renders the details (no search-attribute upsert).
func (r *execution) rejected(name, payload, reason string) (quiet bool) {
	r.state.Rejected = append(r.state.Rejected, Rejected{Signal: name, Payload: payload, Reason: reason})
	if n := len(r.state.Rejected); n > MaxRejected {
		r.state.Rejected = r.state.Rejected[n-MaxRejected:]
	}
	r.state.Rejects++
	r.state.RejectStreak++
	quiet = r.state.RejectStreak > QuietRejects &&
		r.v.of(r.ctx, versionQuietRejects) >= 1
	if quiet {
		return true // counted in State.Rejects, not logged one by one
	}
	workflow.GetLogger(r.ctx).Warn("rejected operator signal", "signal", name, "reason", logtext.Text(reason))
	r.event(progress.Event{Type: progress.EventRejected, Step: name, Preview: agent.Clip(payload, agent.PreviewLen), Reason: reason})
	return false
}

// unknownSignals returns the names that are not operator signals, sorted.
func unknownSignals(names []string) []string {
	var out []string
	for _, n := range names {
		if !operator.IsSignal(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// validate decodes a payload, checking its shape (decodeOperator), and
// checks it against where the run stands (operator.Check): every operator
// input, signal or update, comes through it. It changes nothing.
func (r *execution) validate(name string, raw converter.RawValue) (operator.Signal, error) {
	sig, err := decodeOperator(name, raw)
	if err != nil {
		return sig, err
	}
	if sig.Name == operator.SignalBudget && r.sharing != nil {
		return sig, r.childBudget()
	}
	if c := r.forwardTo(sig); c != nil {
		return sig, operator.Check(sig, r.childStand(c))
	}
	return sig, operator.Check(sig, r.stand())
}

// stand is where the run stands, for operator.Check.
func (r *execution) stand() operator.Stand {
	s := operator.Stand{RunID: r.id, Status: r.state.Status, Outcome: r.outcome, Facts: r.turn.facts,
		Budget: r.budget, Turns: r.turnsUsed(), Usage: r.state.Usage, FirstExecution: workflow.GetInfo(r.ctx).FirstRunID}
	if c := r.state.Child; c != nil && r.delegating != nil {
		// A raise must leave the running child room above what it used.
		s.Turns += c.Turns
		s.Usage = s.Usage.Add(c.Usage)
	}
	if f := r.state.Fence; f != nil {
		s.Holder, s.Now = &operator.Holder{Step: f.Step, Attempt: f.Attempt, Until: f.Until}, workflow.Now(r.ctx)
	}
	return s
}

// apply records a valid operator input (operator.Target.Apply) and wakes the
// main loop.
func (r *execution) apply(sig operator.Signal) {
	r.state.RejectStreak = 0
	if c := r.forwardTo(sig); c != nil {
		r.forward(sig, c)
		r.inputs.changes++
		return
	}
	ops := operator.Target{Facts: r.turn.facts, Budget: r.budget, Turn: r.turn.cp.Turn, Models: r.turn.models}
	at := ops.Apply(sig)
	switch sig.Name {
	case operator.SignalMessage:
		r.state.Messages++
		r.state.MessageStep = at
	case operator.SignalBudget:
		r.budget = ops.Budget
		r.state.Budget = r.budget.WithDefaults()
		r.shareBudget()
	case operator.SignalReconcile:
		if sig.Outcome == operator.OutcomeDone {
			r.record(StepRecord{Name: sig.Step, Kind: agent.KindWrite, Generation: r.turn.gen[sig.Step], Reconciled: true, Preview: agent.Clip(sig.Result, agent.PreviewLen)})
		}
	}
	r.inputs.changes++
}
