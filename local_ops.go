package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// Operator is what a person does with a run, on either engine: [*Run] on
// Temporal and [*LocalRun] on the local engine have these methods, with
// the same types and errors, so code that reads a run's pending calls and
// decides on them is written once.
type Operator interface {
	ID() string
	State(ctx context.Context) (State, error)
	Pending(ctx context.Context) ([]PendingCall, error)
	Approve(ctx context.Context, marker, digest string) (Answer, error)
	Deny(ctx context.Context, marker, digest, reason string) (Answer, error)
	Done(ctx context.Context, step, result string) (Answer, error)
	Retry(ctx context.Context, step string) (Answer, error)
	Budget(ctx context.Context, b Budget) (Answer, error)
	Message(ctx context.Context, text string) (Answer, error)
	Cancel(ctx context.Context) error
	Wait(ctx context.Context) (Result, error)
	Subscribe(ctx context.Context, opts SubscribeOptions) iter.Seq2[Update, error]
}

var (
	_ Operator = (*Run)(nil)
	_ Operator = (*LocalRun)(nil)
)

// State returns where the run stands, read from its journal, as
// [Run.State] reports it: status, pending calls, the Indeterminate step
// (Why says why), the completed steps, budget and usage. A local run keeps
// no refused inputs (Rejected): a refusal is the error of the input.
func (r *LocalRun) State(ctx context.Context) (State, error) {
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	e, _, _, err := r.l.of(r.id)
	if err != nil {
		return State{}, err
	}
	info, err := e.Show(r.id)
	if err != nil {
		return State{}, r.wrap("show", err)
	}
	return stateOf(info), nil
}

// stateOf is a local run's RunInfo as a State.
func stateOf(info local.RunInfo) State {
	st := State{Status: info.Status, Pending: info.Pending, Indeterminate: info.Indeterminate, Answer: info.Answer,
		CutOff: info.CutOff, Empty: info.Empty, Reason: info.Reason, Budget: info.Budget, Turns: info.Turns, Usage: info.Usage}
	if info.Status == agent.StatusIndeterminate {
		st.Why = info.Reason
	}
	for _, s := range info.Steps {
		if s.State != "completed" {
			continue
		}
		st.Steps = append(st.Steps, workflows.StepRecord{Name: s.Name, Kind: s.Kind, Preview: s.Result, Settled: s.Settled})
	}
	st.StepCount = len(st.Steps)
	if n := len(st.Steps) - workflows.MaxSteps; n > 0 {
		st.Steps = st.Steps[n:] // the newest, as the state query keeps them
	}
	for _, x := range info.Expired {
		tool := x.Marker[strings.LastIndex(x.Marker, "/")+1:] // tool/N/I/NAME
		st.Expired = append(st.Expired, workflows.Expired{Marker: x.Marker, Tool: tool, After: strings.TrimPrefix(x.Reason, "approval expired after ")})
	}
	if c := info.Child; c != nil {
		st.Child = &workflows.Child{Run: c.RunID, Agent: c.Agent, Status: c.Status}
	}
	return st
}

// Pending returns the calls that wait for a person, with their arguments,
// as [Run.Pending] does. The arguments of an Indeterminate write are read
// from the run's journal too: Args decodes them.
func (r *LocalRun) Pending(ctx context.Context) ([]PendingCall, error) {
	e, a, _, err := r.l.of(r.id)
	if err != nil {
		return nil, err
	}
	info, err := e.Show(r.id)
	if err != nil {
		return nil, r.wrap("show", err)
	}
	var calls []PendingCall
	switch info.Status {
	case agent.StatusAwaitingApproval:
		for _, p := range info.Pending {
			c := PendingCall{Marker: p.Marker, Tool: p.Tool, Digest: p.Digest, Expires: p.Expires}
			c.args, c.err = a.exec.PendingArgs(ctx, p)
			calls = append(calls, c)
		}
	case agent.StatusIndeterminate:
		step := info.Indeterminate
		c := PendingCall{Marker: step, Tool: step[strings.LastIndex(step, "/")+1:], Indeterminate: true, Why: info.Reason}
		c.args, c.err = r.writeArgs(ctx, e, a, info)
		calls = append(calls, c)
	}
	return calls, nil
}

// writeArgs reads the arguments of the Indeterminate write of info (the
// run's, or its child run's) from the model step that asked for it.
func (r *LocalRun) writeArgs(ctx context.Context, e *local.Engine, a localAgent, info local.RunInfo) (json.RawMessage, error) {
	step, runID := info.Indeterminate, r.id
	if info.Child != nil {
		runID = info.Child.RunID
	}
	n, _ := agent.StepTurn(step)
	parts := strings.Split(step, "/") // tool/N/I/NAME
	i, err := strconv.Atoi(parts[min(2, len(parts)-1)])
	if err != nil {
		return nil, fmt.Errorf("arguments of %s: not a tool step", step)
	}
	_, raw, err := e.Step(runID, agent.ModelStep(n))
	if err != nil {
		return nil, fmt.Errorf("arguments of %s: %w", step, err)
	}
	reply, err := agent.DecodeModelReply(raw)
	if err != nil || i >= len(reply.Message.ToolCalls) {
		return nil, fmt.Errorf("arguments of %s: the reply of %s has no such call (%v)", step, agent.ModelStep(n), err)
	}
	call := reply.Message.ToolCalls[i]
	return a.exec.PendingArgs(ctx, agent.Pending{Marker: step, Tool: call.Name, Args: call.Args, ArgsRef: call.ArgsRef})
}

// Approve lets the call waiting for approval at marker run, as
// [Run.Approve]: pinned to the arguments with digest ("" pins it to those
// pending now). The run goes on when it is driven next ([LocalRun.Resume],
// or at once when a [LocalRun.Wait] drives it).
func (r *LocalRun) Approve(ctx context.Context, marker, digest string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalApprove, Marker: marker, Digest: digest})
}

// Deny refuses the call waiting for approval at marker, as [Run.Deny].
func (r *LocalRun) Deny(ctx context.Context, marker, digest, reason string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalDeny, Marker: marker, Digest: digest, Reason: reason})
}

// Done settles the Indeterminate write at step, as [Run.Done]: it took
// effect with result, which the model reads; the tool does not run again.
func (r *LocalRun) Done(ctx context.Context, step, result string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeDone, Result: result})
}

// Retry settles the Indeterminate write at step by running it once more,
// as [Run.Retry].
func (r *LocalRun) Retry(ctx context.Context, step string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeRetry})
}

// Budget raises the run's limits to b, as [Run.Budget].
func (r *LocalRun) Budget(ctx context.Context, b Budget) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalBudget, MaxTurns: b.MaxTurns, MaxTokens: b.MaxTokens, MaxCost: b.MaxCost})
}

// Message adds a user message with text before the run's next model call,
// as [Run.Message]; the run's next driver answers it.
func (r *LocalRun) Message(ctx context.Context, text string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalMessage, Content: text})
}

// Cancel ends the run as Cancelled, as [Run.Cancel]: a process driving it
// stops its running step and runs nothing more. A run that ended is an
// [*EndedError].
func (r *LocalRun) Cancel(ctx context.Context) error {
	e, _, err := r.admit()
	if err != nil {
		return err
	}
	if err := e.Cancel(ctx, r.id); err != nil {
		return r.refusal(e, operator.Signal{Name: "cancel"}, err)
	}
	return nil
}

// admit returns the engine of the run, and where it stands, or the error
// for a run that is unknown or ended.
func (r *LocalRun) admit() (*local.Engine, local.RunInfo, error) {
	e, _, _, err := r.l.of(r.id)
	if err != nil {
		return nil, local.RunInfo{}, err
	}
	info, err := e.Show(r.id)
	if err != nil {
		return nil, info, r.wrap("show", err)
	}
	if info.Status.Terminal() {
		return nil, info, &EndedError{RunID: r.id, Status: info.Status}
	}
	return e, info, nil
}

// send records the operator's input sig in the run's journal, after the
// checks of the engine (the same as the Temporal workflow's), and returns
// where the run stands then.
func (r *LocalRun) send(ctx context.Context, sig operator.Signal) (Answer, error) {
	if err := operator.CheckShape(sig); err != nil {
		return Answer{}, refused(r.id, sig, err.Error())
	}
	e, info, err := r.admit()
	if err != nil {
		return Answer{}, err
	}
	if (sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny) && sig.Digest == "" {
		// Decide on the arguments pending now (the run checks them anyway),
		// and say which they were.
		for _, p := range info.Pending {
			if p.Marker == sig.Marker {
				sig.Digest = p.Digest
			}
		}
	}
	if err := e.Signal(ctx, r.id, sig); err != nil {
		return Answer{}, r.refusal(e, sig, err)
	}
	ans := Answer{Digest: sig.Digest}
	if info, err := e.Show(r.id); err == nil {
		ans.State = stateOf(info).Brief()
	}
	return ans, nil
}

// refusal is the error of an input the engine did not record: the run
// ended meanwhile, refused it (a *RefusedError), or err.
func (r *LocalRun) refusal(e *local.Engine, sig operator.Signal, err error) error {
	if errors.Is(err, operator.ErrInvalid) {
		if info, serr := e.Show(r.id); serr == nil && info.Status.Terminal() {
			return &EndedError{RunID: r.id, Status: info.Status}
		}
		return refused(r.id, sig, err.Error())
	}
	return r.wrap(sig.Name, err)
}

// wrap names what failed: ErrRunNotFound for a run with no journal,
// otherwise err with what was done to which run.
func (r *LocalRun) wrap(what string, err error) error {
	if errors.Is(err, operator.ErrUnknownRun) {
		return fmt.Errorf("run %s not found: %w", r.id, ErrRunNotFound)
	}
	return fmt.Errorf("%s run %s: %w", what, r.id, err)
}
