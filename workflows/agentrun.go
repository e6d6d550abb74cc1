package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
)

// Activity timeouts and retries.
const (
	// HeartbeatTimeout is how soon a dead worker is noticed inside a step.
	HeartbeatTimeout = 5 * time.Second
	// StepTimeout bounds one attempt of a model or tool step.
	StepTimeout = 10 * time.Minute
)

// versionParkedContinue guards continuing as new from a wait (when
// Temporal suggests it or the stream served maxPolls polls), and
// versionQuietRejects recording a refused input past QuietRejects in a row
// without a search-attribute upsert or a stream item: version 1 does.
const (
	versionParkedContinue = "parked-continue-as-new"
	versionQuietRejects   = "quiet-rejects"
)

// errContinue is returned by wait when the run should continue as new.
var errContinue = errors.New("continue as new")

// versionUpdateAnswer guards the change that made an update wait until the
// run acted on it (workflow.GetVersion): version 1 waits.
const versionUpdateAnswer = "update-answer-after-acting"

// a names the activities; the workflow never calls its methods directly.
var a *activities.Activities

// run is the state of one AgentRun execution.
type run struct {
	ctx  workflow.Context
	id   string
	in   Input
	loop agent.Loop
	cp   agent.Checkpoint // the start of the current turn
	// facts are about the current turn only: older ones are forgotten.
	facts *agent.Facts
	gen   map[string]int // executions of each write step of the turn
	cat   activities.Catalog
	// budget is the run's limits: from the input, raised by budget inputs.
	budget agent.Budget
	// stepsHere counts the steps this execution ran, for ContinueAfter.
	stepsHere int
	outcome   *agent.Outcome // where the run waits; nil while a step runs
	// since holds when each call with an approval timeout became pending.
	since   map[string]time.Time
	state   State
	changes int // operator inputs applied; the main loop waits on it
	// acted is the value of changes the main loop last acted on: it ran
	// the loop over them and started the next step or waits again. An
	// update answers once its input is acted on, or the run closes.
	acted   int
	closing bool
	// models is the newest model step started: a message goes to the next.
	models int
	// idle is how long a session waits for a message after an answer.
	idle time.Duration
	// stream is the run's Workflow Streams log (stream.go); lastStatus the
	// status event it published last.
	stream     *streams.Host
	lastStatus string
}

// AgentRun drives one agent run until it completes or fails, waiting for
// people where the loop says so. It continues as new when Temporal suggests
// it (or after in.ContinueAfter steps), carrying a checkpoint.
func AgentRun(ctx workflow.Context, in Input) (Result, error) {
	if err := applyTestChange(ctx); err != nil {
		return Result{}, err
	}
	// continued is the run's own checkpoint, honoured only in an execution
	// that really continues one: the server sets the continued run id, and
	// a start input cannot. Its tool kinds and queued calls are never
	// taken from a client.
	forged := in.Continued != nil && workflow.GetInfo(ctx).ContinuedExecutionRunID == ""
	if forged {
		in.Continued = nil
	}
	r := &run{
		ctx:    ctx,
		id:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		in:     in,
		facts:  agent.NewFacts(),
		gen:    map[string]int{},
		state:  State{Status: agent.StatusRunning, Steps: []StepRecord{}},
		since:  map[string]time.Time{},
		budget: agent.Budget{MaxTurns: in.MaxTurns, MaxTokens: in.MaxTokens},
	}
	if c := in.Continued; c != nil {
		r.restore(c)
	}
	var prev *streams.State
	if in.Continued != nil {
		prev = in.Continued.Stream
	}
	if err := r.openStream(prev); err != nil {
		return Result{}, err
	}
	r.state.Budget = r.budget.WithDefaults()
	if err := r.setHandlers(); err != nil {
		return Result{}, err
	}
	if forged {
		return r.fail(ForgedContinued)
	}
	if in.Continued == nil && len(in.Messages) == 0 {
		return r.fail("the input has no messages")
	}
	if in.Session {
		r.idle = DefaultSessionIdle
		if in.SessionIdle != "" {
			d, err := time.ParseDuration(in.SessionIdle)
			if err != nil || d <= 0 {
				return r.fail(fmt.Sprintf("the input has session_idle %q: want a positive Go duration such as \"24h\", or absent for %s", in.SessionIdle, DefaultSessionIdle))
			}
			r.idle = d
		}
		r.state.Session, r.state.Idle = true, r.idle.String()
	}
	if in.MaxTurns < 0 || in.MaxTokens < 0 {
		return r.fail(fmt.Sprintf("the input has max_turns %d, max_tokens %d: want positive limits, or absent for %d model calls and no token limit", in.MaxTurns, in.MaxTokens, agent.DefaultMaxTurns))
	}
	r.publish()

	if in.Continued == nil {
		lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			ActivityID:          "tools",
			Summary:             "tools · list",
			StartToCloseTimeout: time.Minute,
			HeartbeatTimeout:    HeartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 10},
		})
		if err := workflow.ExecuteActivity(lctx, a.ListTools).Get(ctx, &r.cat); err != nil {
			if ctx.Err() != nil {
				return r.cancelled()
			}
			return r.fail("list tools: " + err.Error())
		}
		r.state.Model = r.cat.Model
		r.cp = agent.Start(in.Messages)
	}
	r.loop = agent.Loop{Tools: r.cat.Tools, ToolsKey: r.cat.ToolsKey, FailOnCut: r.cat.FailOnCut}

	for {
		if ctx.Err() != nil {
			return r.cancelled()
		}
		now := r.changes
		d := r.budget.Limit(r.loop.Next(r.cp, r.facts), r.state.Usage)
		r.advance(d.Checkpoint)
		if d.Step != nil {
			if r.shouldContinue() {
				return Result{}, r.continueAsNew()
			}
			if r.outcome != nil || r.state.Status != agent.StatusRunning {
				r.outcome = nil
				r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Why, r.state.Reason = agent.StatusRunning, nil, "", "", ""
				r.state.Fence = nil
				r.publish()
			}
			r.acted = now
			if n, tool := agent.StepTurn(d.Step.Name); !tool && n > r.models {
				r.models = n
			}
			if err := r.execute(*d.Step); err != nil {
				if ctx.Err() != nil {
					return r.cancelled()
				}
				return r.fail(err.Error())
			}
			continue
		}
		o := d.Outcome
		switch o.Status {
		case agent.StatusCompleted:
			r.state.Status, r.state.Answer, r.state.CutOff = agent.StatusCompleted, o.Answer, o.CutOff
			r.state.AnswerTurn = r.cp.Turn
			r.state.Pending, r.state.Indeterminate = nil, ""
			if r.in.Session {
				// A session waits for a message; with none it completes.
				r.outcome = o
				r.state.Status = agent.StatusIdle
				r.publish()
				r.acted = now
				woke, err := workflow.AwaitWithTimeout(ctx, r.idle, func() bool { return r.changes != now })
				if err != nil || ctx.Err() != nil {
					return r.cancelled()
				}
				if woke {
					continue
				}
				r.state.Status = agent.StatusCompleted
			}
			r.publish()
			r.drain(true)
			return Result{Answer: o.Answer, Usage: r.state.Usage, Steps: r.state.StepCount, CutOff: o.CutOff}, nil
		case agent.StatusFailed:
			return r.fail(o.Reason)
		}
		r.outcome = o
		r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Reason = o.Status, o.Pending, o.Step, o.Reason
		r.publish()
		r.acted = now
		if err := r.wait(now); err != nil {
			if ctx.Err() != nil {
				return r.cancelled()
			}
			if errors.Is(err, errContinue) {
				return Result{}, r.continueAsNew()
			}
			return Result{}, err
		}
	}
}

// wait blocks until an operator input changed the run or, while calls with
// an approval timeout are pending, until the first of them expires, which
// denies it. The timer is Temporal's: it fires with no worker running.
//
// A run that waits long may take many inputs (and polls): when Temporal
// suggests continuing as new, or the stream served maxPolls polls, wait
// returns errContinue and the run continues as new from where it waits,
// carrying its facts, its pending calls' clocks and its stream.
func (r *run) wait(seen int) error {
	parked := true // continue as new from here when it is due
	woke := func() bool { return r.changes != seen || (parked && r.mustContinue()) }
	var first time.Time
	if r.outcome.Status == agent.StatusAwaitingApproval {
		now := workflow.Now(r.ctx)
		for _, p := range r.outcome.Pending {
			if p.Expires <= 0 {
				continue
			}
			if _, ok := r.since[p.Marker]; !ok {
				r.since[p.Marker] = now
			}
			if at := r.since[p.Marker].Add(p.Expires); first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	for {
		ok, err := true, error(nil)
		if first.IsZero() {
			err = workflow.Await(r.ctx, woke)
		} else if left := first.Sub(workflow.Now(r.ctx)); left > 0 {
			ok, err = workflow.AwaitWithTimeout(r.ctx, left, woke)
		} else {
			ok = false
		}
		switch {
		case err != nil:
			return err
		case !ok:
			r.expire()
			return nil
		case r.changes != seen:
			return nil
		}
		// Woken to continue as new. Histories recorded before a wait could
		// continue as new replay as they were: they wait on.
		if workflow.GetVersion(r.ctx, versionParkedContinue, workflow.DefaultVersion, 1) >= 1 {
			return errContinue
		}
		parked = false
	}
}

// mustContinue reports whether the run must continue as new before it goes
// on: Temporal suggests it (its history nears the limits), or its stream
// served maxPolls polls.
func (r *run) mustContinue() bool {
	return workflow.GetInfo(r.ctx).GetContinueAsNewSuggested() || r.stream.Served() >= maxPolls
}

// expire denies every pending call whose approval timeout has passed.
func (r *run) expire() {
	now := workflow.Now(r.ctx)
	for _, p := range r.outcome.Pending {
		since, ok := r.since[p.Marker]
		if !ok || p.Expires <= 0 || now.Before(since.Add(p.Expires)) {
			continue
		}
		sig := operator.Signal{Name: operator.SignalDeny, Marker: p.Marker, Reason: agent.ExpiredReason(p.Expires)}
		if operator.Validate(sig, r.outcome, r.facts) != nil {
			continue // decided meanwhile
		}
		workflow.GetLogger(r.ctx).Info("approval expired", "step", p.Marker, "after", p.Expires.String())
		r.state.Expired = append(r.state.Expired, Expired{Marker: p.Marker, Tool: p.Tool, After: p.Expires.String()})
		r.apply(sig)
	}
}

// advance moves the run to a newer checkpoint and forgets what it settled.
func (r *run) advance(cp agent.Checkpoint) {
	if cp.Turn == r.cp.Turn {
		return
	}
	r.cp = cp
	r.state.Turns = cp.Turn
	r.facts.Forget(cp)
	clear(r.since)
	for name := range r.gen {
		if n, _ := agent.StepTurn(name); n < cp.Turn {
			delete(r.gen, name)
		}
	}
}

// maxPolls is how many stream polls an execution serves before it continues
// as new: the server refuses updates past 2,000 per run.
const maxPolls = 1500

// shouldContinue reports whether the run should continue as new before its
// next step: Temporal suggests it, its stream served maxPolls polls, or
// ContinueAfter steps ran here.
func (r *run) shouldContinue() bool {
	if r.mustContinue() {
		return true
	}
	return r.in.ContinueAfter > 0 && r.stepsHere >= r.in.ContinueAfter
}

// continueAsNew ends this execution with a continue-as-new that carries the
// checkpoint, after applying every operator input already delivered.
func (r *run) continueAsNew() error {
	r.drain(false)
	for _, name := range operator.Signals() {
		ch := workflow.GetSignalChannel(r.ctx, name)
		for {
			var raw converter.RawValue
			if !ch.ReceiveAsync(&raw) {
				break
			}
			r.operate(name, raw)
		}
	}
	next := Input{MaxTurns: r.budget.MaxTurns, MaxTokens: r.budget.MaxTokens, ContinueAfter: r.in.ContinueAfter,
		Session: r.in.Session, SessionIdle: r.in.SessionIdle, Stream: r.in.Stream, Continued: r.checkpoint()}
	st := r.stream.State()
	next.Continued.Stream = &st
	next.Continued.LastStatus = r.lastStatus
	workflow.GetLogger(r.ctx).Info("continuing as new", "turn", r.cp.Turn, "steps", r.state.StepCount)
	return workflow.NewContinueAsNewError(r.ctx, WorkflowName, next)
}

// checkpoint is what a continued run needs: bounded whatever the turn.
func (r *run) checkpoint() *Continued {
	st := r.state
	st.Status, st.Pending, st.Indeterminate, st.Reason = agent.StatusRunning, nil, "", ""
	c := &Continued{Checkpoint: r.cp, Facts: r.facts, Generations: r.gen, Catalog: r.cat, State: st, Runs: r.state.Runs + 1}
	if len(r.since) > 0 {
		c.Since = r.since
	}
	return c
}

// restore takes over a previous execution's checkpoint.
func (r *run) restore(c *Continued) {
	r.cp, r.cat, r.state = c.Checkpoint, c.Catalog, c.State
	r.state.Runs = c.Runs
	r.lastStatus = c.LastStatus
	if r.state.Steps == nil {
		r.state.Steps = []StepRecord{}
	}
	r.facts = c.Facts.Complete()
	r.models = r.cp.Turn
	if c.Generations != nil {
		r.gen = c.Generations
	}
	for m, t := range c.Since {
		r.since[m] = t
	}
}

// execute runs one step as an activity and records its result as a fact.
func (r *run) execute(s agent.Step) error {
	in := activities.StepInput{Step: s, RunKey: workflow.GetInfo(r.ctx).FirstRunID}
	opts := workflow.ActivityOptions{
		ActivityID:          s.Name,
		StartToCloseTimeout: StepTimeout,
		HeartbeatTimeout:    HeartbeatTimeout,
	}
	var fn any
	if s.Kind == agent.KindModel {
		fn = a.CallModel
		in.Stream = r.streaming()
		opts.Summary = s.Name + " · " + r.state.Model
		opts.RetryPolicy = &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: activities.NonRetryableModelErrors,
		}
		if t := r.cat.ModelTimeout + time.Minute; t > opts.StartToCloseTimeout {
			opts.StartToCloseTimeout = t // the request times out first
		}
	} else {
		fn = a.CallTool
		opts.Summary = s.Name + " · " + string(s.Kind)
		if t, ok := r.cat.Timeouts[s.Call.Name]; ok && t > 0 {
			opts.StartToCloseTimeout = t + time.Minute
			if s.Kind == agent.KindWrite && !s.Idempotent {
				opts.StartToCloseTimeout = activities.WriteStartToClose(t)
			}
		}
		opts.RetryPolicy = &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{activities.ErrTypeIndeterminate, activities.ErrTypeGuard},
		}
		if s.Kind == agent.KindWrite && !s.Idempotent {
			r.gen[s.Name]++
			in.Generation = r.gen[s.Name]
			if in.Generation > 1 {
				opts.ActivityID = s.Name + "#" + strconv.Itoa(in.Generation)
			}
			// A second attempt settles the write: its result, its probe's
			// or its key's, or Indeterminate.
			opts.RetryPolicy.MaximumAttempts = 3
			if s.Settle != nil && s.Settle.KeyArg != "" {
				// Its key makes every attempt safe: retried like a read.
				opts.RetryPolicy.MaximumAttempts = 10
			}
			// A cancelled run waits for the write to stop, so that its
			// state says whether it completed.
			opts.WaitForCancellation = true
		}
	}
	if s.Settle != nil {
		// The idempotency key of this execution: the same on every attempt
		// and worker, a new one for each retry a person asks for.
		settle := *s.Settle
		settle.Key = agent.IdempotencyKey(in.RunKey, s.Name, in.Generation)
		in.Step.Settle = &settle
		opts.Summary += settleSummary(settle)
	}
	r.event(progress.Event{Type: progress.EventStepStarted, Step: s.Name, Kind: s.Kind})
	var res json.RawMessage
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(r.ctx, opts), fn, in).Get(r.ctx, &res)
	for waits := 0; err != nil && r.ctx.Err() == nil && waits < maxFenceWaits; waits++ {
		// An earlier attempt of the write may still be running: wait until
		// it cannot, then run the step again to settle it.
		holder, ok := fencedBy(err)
		if !ok {
			break
		}
		r.waitFence(s.Name, holder)
		if r.ctx.Err() != nil {
			break
		}
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(r.ctx, opts), fn, in).Get(r.ctx, &res)
	}
	if r.state.Fence != nil && r.state.Fence.Waiting {
		r.state.Fence = nil
		r.showDetails()
	}
	if err != nil {
		if r.ctx.Err() != nil {
			if s.Kind == agent.KindWrite {
				r.state.InFlight = s.Name
			}
			return err
		}
		if s.Kind == agent.KindWrite && !s.Idempotent && !refused(err) {
			// Whatever stopped it, nobody knows whether the write took effect.
			r.facts.Indeterminate[s.Name] = true
			r.state.Why = indeterminateWhy(err)
			// Until when its last attempt may still act: a person's retry
			// is refused before then (validate).
			r.state.Fence = r.lastAttempt(s, err)
			return nil
		}
		return fmt.Errorf("%s: %w", s.Name, errors.Unwrap(err))
	}
	r.facts.Results[s.Name] = res
	r.stepsHere++
	preview, reply, isReply := summarize(s.Kind, res)
	rec := StepRecord{Name: s.Name, Kind: s.Kind, Generation: in.Generation, Preview: preview}
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
	}
	r.event(done)
	return nil
}

// maxFenceWaits bounds how often one execution of a write waits for an
// earlier attempt: each wait ends past that attempt's deadline, so a second
// one means the clocks disagree by more than journal.Grace.
const maxFenceWaits = 3

// fencedBy returns the earlier attempt named by an activity failure of
// type activities.ErrTypeFenced.
func fencedBy(err error) (journal.Attempt, bool) {
	var appErr *temporal.ApplicationError
	var holder journal.Attempt
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
func (r *run) waitFence(step string, holder journal.Attempt) {
	r.state.Fence = &Fence{Step: step, Attempt: holder.String(), Until: holder.Until(), Waiting: true}
	workflow.GetLogger(r.ctx).Info("waiting for an earlier attempt of a write", "step", step, "holder", holder.String(), "until", operator.FormatUntil(holder.Until()))
	r.showDetails()
	r.event(progress.Event{Type: progress.EventFenceWait, Step: step, Reason: r.state.Fence.String()})
	if left := holder.Until().Add(time.Second).Sub(workflow.Now(r.ctx)); left > 0 {
		_ = workflow.Sleep(r.ctx, left)
	}
}

// lastAttempt is the attempt of a write that failed and may still be
// running: the one the guard named, or, when the last attempt timed out
// (its worker froze or was cut off), that attempt, which started before
// now and so ends before now plus its tool's timeout.
func (r *run) lastAttempt(s agent.Step, err error) *Fence {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeIndeterminate {
		var holder journal.Attempt
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
	return &Fence{Step: s.Name, Attempt: "the last attempt", Until: workflow.Now(r.ctx).Add(t + journal.Grace)}
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
func (r *run) streaming() bool {
	if r.in.Stream != nil {
		return *r.in.Stream
	}
	return r.in.Session
}

// settleSummary says in a step's summary how an interrupted write is
// settled without a person.
func settleSummary(s agent.Settle) string {
	var how []string
	if s.KeyArg != "" {
		how = append(how, "key "+s.KeyArg)
	}
	if s.Probe != nil {
		how = append(how, "probe "+s.Probe.Tool)
	}
	return " · settles by " + strings.Join(how, ", ")
}

// settled notes a write settled without a person: the state keeps the
// newest MaxSettled, and the run's details show them.
func (r *run) settled(rec StepRecord) {
	r.state.Settled = append(r.state.Settled, SettledStep{Step: rec.Name, Settled: *rec.Settled})
	if n := len(r.state.Settled); n > MaxSettled {
		r.state.Settled = append([]SettledStep(nil), r.state.Settled[n-MaxSettled:]...)
	}
	workflow.GetLogger(r.ctx).Info("write settled without a person", "step", rec.Name, "how", rec.Settled.String())
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

// fail ends the run as Failed.
func (r *run) fail(reason string) (Result, error) {
	r.state.Status, r.state.Reason = agent.StatusFailed, reason
	r.state.Pending, r.state.Indeterminate = nil, ""
	r.publish()
	r.drain(true)
	return Result{}, temporal.NewNonRetryableApplicationError(reason, ErrTypeFailed, nil)
}

// cancelled ends the run as Cancelled: the operator cancelled the
// workflow. A running model call or read was cancelled with it; a write
// that was running is named, as it may have taken effect.
func (r *run) cancelled() (Result, error) {
	err := r.ctx.Err()
	r.ctx, _ = workflow.NewDisconnectedContext(r.ctx)
	r.state.Status, r.state.Pending, r.state.Indeterminate = agent.StatusCancelled, nil, ""
	r.state.Reason = agent.CancelledReason(r.state.InFlight)
	r.publish()
	r.closeStream(true)
	return Result{}, err
}

// drain lets handlers in flight finish before the run closes (completing)
// or continues as new: the stream's polls end (after a subscriber caught up
// with a completing run), updates waiting for the loop answer now.
func (r *run) drain(completing bool) {
	r.closeStream(completing)
	r.closing = true
	_ = workflow.Await(r.ctx, func() bool { return workflow.AllHandlersFinished(r.ctx) })
}

// record adds a completed step to the state, which keeps the newest
// MaxSteps of them.
func (r *run) record(s StepRecord) {
	r.state.StepCount++
	r.state.Steps = append(r.state.Steps, s)
	if n := len(r.state.Steps); n > MaxSteps {
		r.state.Steps = append([]StepRecord(nil), r.state.Steps[n-MaxSteps:]...)
	}
}

// publish makes the state visible: search attributes and current details.
func (r *run) publish() {
	step := temporal.SearchAttributeUpdate(StepKey.ValueUnset())
	switch r.state.Status {
	case agent.StatusAwaitingApproval:
		markers := make([]string, len(r.state.Pending))
		for i, p := range r.state.Pending {
			markers[i] = p.Marker
		}
		step = StepKey.ValueSet(StepAttr(markers))
	case agent.StatusIndeterminate:
		step = StepKey.ValueSet(r.state.Indeterminate)
	}
	if err := workflow.UpsertTypedSearchAttributes(r.ctx, StatusKey.ValueSet(string(r.state.Status)), step); err != nil {
		workflow.GetLogger(r.ctx).Warn("upsert search attributes", "error", err)
	}
	r.showDetails()
	r.statusEvent()
}

// StepAttr is the AgentRunStep value for pending markers: the markers
// joined by commas, or, when that is longer than MaxStepAttr, the first
// ones that fit and ",+N more" (the state query lists them all).
func StepAttr(markers []string) string {
	all := strings.Join(markers, ",")
	if len(all) <= MaxStepAttr {
		return all
	}
	var b strings.Builder
	for i, m := range markers {
		more := ",+" + strconv.Itoa(len(markers)-i) + " more"
		sep := ""
		if i > 0 {
			sep = ","
		}
		if b.Len()+len(sep)+len(m)+len(",+"+strconv.Itoa(len(markers)-i-1)+" more") > MaxStepAttr {
			if i == 0 {
				more = more[1:]
			}
			return b.String() + more
		}
		b.WriteString(sep + m)
	}
	return b.String()
}

// showDetails renders the current details; unlike publish it adds no
// command to the history.
func (r *run) showDetails() {
	workflow.SetCurrentDetails(r.ctx, details(workflow.GetInfo(r.ctx).Namespace, r.id, &r.state))
}

// setHandlers registers the state query, the operator signals and the
// operator updates.
func (r *run) setHandlers() error {
	if err := workflow.SetQueryHandlerWithOptions(r.ctx, QueryState, func() (State, error) { return r.state, nil },
		workflow.QueryHandlerOptions{Description: "where the run stands: status, pending markers, the indeterminate step, steps, usage, rejected inputs"}); err != nil {
		return err
	}
	names := operator.Signals()
	chans := make([]workflow.ReceiveChannel, len(names))
	for i, name := range names {
		chans[i] = workflow.GetSignalChannelWithOptions(r.ctx, name, workflow.SignalChannelOptions{Description: "payload " + operator.Format(name)})
		err := workflow.SetUpdateHandlerWithOptions(r.ctx, name,
			func(ctx workflow.Context, raw converter.RawValue) (State, error) {
				sig, err := r.validate(name, raw)
				if err != nil {
					return r.state, err // the validator already refused it; unreachable in practice
				}
				waiting := r.outcome != nil
				r.apply(sig)
				// Runs recorded before answers waited answered at once: the
				// version keeps their command order on replay.
				if waiting && workflow.GetVersion(ctx, versionUpdateAnswer, workflow.DefaultVersion, 1) >= 1 {
					// The run waits on a person: answer with where it goes
					// once the loop has acted on this input.
					mine := r.changes
					_ = workflow.Await(ctx, func() bool { return r.acted >= mine || r.closing })
				}
				return r.state, nil
			},
			workflow.UpdateHandlerOptions{
				Validator: func(ctx workflow.Context, raw converter.RawValue) error {
					_, err := r.validate(name, raw)
					return err
				},
				Description: "the " + name + " operator signal, answered with the state once the run acted on it",
			})
		if err != nil {
			return err
		}
	}
	workflow.Go(r.ctx, func(ctx workflow.Context) { r.takeSignals(ctx, names, chans) })
	return nil
}

// takeSignals handles the signals as they arrive, in one coroutine (the
// sdk resumes every coroutine at each step of a workflow task, so each one
// costs every task some time): first the stream's publish signals, then
// those sent under a name the run does not handle, until the run is
// cancelled, then the operator signals, by name in the order of
// operatorSignals (chans), each name's in the order they arrived. The
// stream's and the operator signals are taken after a cancel too (the run
// serves its stream while it closes, and records operator signals as
// rejected), as a Receive would.
//
// Not a blocking Receive: it takes a signal out of the channel when it
// arrives and handles it only when this coroutine runs next, so a signal
// that arrives in the task in which the run continues as new would be in
// neither the channel nor the state it carries. Waiting for a channel to
// hold one leaves it there, for continueAsNew to find.
func (r *run) takeSignals(ctx workflow.Context, names []string, chans []workflow.ReceiveChannel) {
	w := unknownWatch{ctx: ctx}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for {
		_ = workflow.Await(dctx, func() bool {
			unknown := w.found() // first: it is current after every wait
			return unknown || r.stream.Pending() || slices.ContainsFunc(chans, func(ch workflow.ReceiveChannel) bool { return ch.Len() > 0 })
		})
		r.stream.Receive()
		if len(w.unknown) > 0 {
			r.rejectUnknown(ctx, w.unknown)
		}
		for i, ch := range chans {
			var raw converter.RawValue
			for ch.ReceiveAsync(&raw) { // a RawValue always decodes
				r.operate(names[i], raw)
			}
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
func (r *run) rejectUnknown(ctx workflow.Context, unknown []string) {
	for _, name := range unknown {
		ch := workflow.GetSignalChannel(ctx, name)
		for {
			var raw converter.RawValue
			if !ch.ReceiveAsync(&raw) {
				break
			}
			r.reject(name, raw, fmt.Errorf("unknown signal %q; the valid signals are %s", name, strings.Join(operator.Signals(), ", ")))
		}
	}
	r.showDetails()
}

// operate handles a signal: apply it, or record why it was rejected.
func (r *run) operate(name string, raw converter.RawValue) {
	sig, err := r.validate(name, raw)
	if err != nil {
		if r.reject(name, raw, err) {
			r.showDetails()
			return
		}
		r.publish()
		return
	}
	r.apply(sig)
}

// reject records an operator signal the run refused, for the state query
// and the current details. It reports whether the refusal is quiet (see
// rejected).
func (r *run) reject(name string, raw converter.RawValue, err error) (quiet bool) {
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
func (r *run) rejected(name, payload, reason string) (quiet bool) {
	r.state.Rejected = append(r.state.Rejected, Rejected{Signal: name, Payload: payload, Reason: reason})
	if n := len(r.state.Rejected); n > MaxRejected {
		r.state.Rejected = r.state.Rejected[n-MaxRejected:]
	}
	r.state.Rejects++
	r.state.RejectStreak++
	quiet = r.state.RejectStreak > QuietRejects &&
		workflow.GetVersion(r.ctx, versionQuietRejects, workflow.DefaultVersion, 1) >= 1
	if quiet {
		return true // counted in State.Rejects, not logged one by one
	}
	workflow.GetLogger(r.ctx).Warn("rejected operator signal", "signal", name, "reason", reason)
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

// validate decodes a payload and checks it against where the run stands
// (operator.Check). It changes nothing.
func (r *run) validate(name string, raw converter.RawValue) (operator.Signal, error) {
	sig, err := decodeOperator(name, raw)
	if err != nil {
		return sig, err
	}
	return sig, operator.Check(sig, r.stand())
}

// stand is where the run stands, for operator.Check.
func (r *run) stand() operator.Stand {
	s := operator.Stand{RunID: r.id, Status: r.state.Status, Outcome: r.outcome, Facts: r.facts,
		Budget: r.budget, Turns: r.cp.Turn, Usage: r.state.Usage, FirstExecution: workflow.GetInfo(r.ctx).FirstRunID}
	if f := r.state.Fence; f != nil {
		s.Holder, s.Now = &operator.Holder{Step: f.Step, Attempt: f.Attempt, Until: f.Until}, workflow.Now(r.ctx)
	}
	return s
}

// apply records a valid operator input (operator.Run.Apply) and wakes the
// main loop.
func (r *run) apply(sig operator.Signal) {
	r.state.RejectStreak = 0
	ops := operator.Run{Facts: r.facts, Budget: r.budget, Turn: r.cp.Turn, Models: r.models}
	at := ops.Apply(sig)
	switch sig.Name {
	case operator.SignalMessage:
		r.state.Messages++
		r.state.MessageStep = at
	case operator.SignalBudget:
		r.budget = ops.Budget
		r.state.Budget = r.budget.WithDefaults()
	case operator.SignalReconcile:
		if sig.Outcome == operator.OutcomeDone {
			r.record(StepRecord{Name: sig.Step, Kind: agent.KindWrite, Generation: r.gen[sig.Step], Reconciled: true, Preview: agent.Clip(sig.Result, agent.PreviewLen)})
		}
	}
	r.changes++
}
