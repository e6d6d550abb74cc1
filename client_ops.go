package agentrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// Answer is what a run answered an operator's input.
type Answer struct {
	// State is where the run stands once it acted on the input: for a
	// message, State.MessageStep is the model step it goes to. Zero when
	// Signalled. It is the state's [State.Brief]: no steps, no
	// refused inputs and no answer text (StepCount, Rejects and AnswerTurn
	// stay), since the run's history records every answer; [Run.State]
	// returns them whole.
	State State
	// Digest is the arguments digest an approve or a deny was pinned to.
	Digest string
	// Signalled is set when the run admitted no update (Temporal allows
	// 10 in flight per run; watchers' polls hold some) and the input went
	// as a signal instead, which the server always takes: the run applies
	// it, or records why it refused it in State.Rejected.
	Signalled bool
}

// Approve lets the call waiting for approval at marker run. The approval
// is pinned to the arguments with digest (a [PendingCall]'s Digest, as
// [Run.Pending] returned it) and to the run's first execution: if other
// arguments are pending now, it is refused with ErrDigestMismatch. A
// digest of "" pins it to the arguments pending now, read just before.
// A refusal is a [*RefusedError] with the run's reason; nothing changed.
func (r *Run) Approve(ctx context.Context, marker, digest string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalApprove, Marker: marker, Digest: digest})
}

// Deny refuses the call waiting for approval at marker: it does not run,
// and the model reads that it was denied, and reason. digest pins the
// denial as in [Run.Approve].
func (r *Run) Deny(ctx context.Context, marker, digest, reason string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalDeny, Marker: marker, Digest: digest, Reason: reason})
}

// Done settles the Indeterminate write at step: it took effect, with
// result (e.g. the ticket's id), which the model reads as the call's
// result; the tool does not run again.
func (r *Run) Done(ctx context.Context, step, result string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeDone, Result: result})
}

// Retry settles the Indeterminate write at step by running it once more:
// for a write that certainly did not take effect.
func (r *Run) Retry(ctx context.Context, step string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalReconcile, Step: step, Outcome: operator.OutcomeRetry})
}

// Budget raises the run's limits to b; a zero field keeps that limit, and
// each one set must be above what the run used. A BudgetExceeded run
// goes on.
func (r *Run) Budget(ctx context.Context, b Budget) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalBudget, MaxTurns: b.MaxTurns, MaxTokens: b.MaxTokens, MaxCost: b.MaxCost})
}

// Message adds a user message with text before the run's next model call,
// and wakes a session waiting Idle. The answer to it comes in the model
// step Answer.State.MessageStep or a later one.
func (r *Run) Message(ctx context.Context, text string) (Answer, error) {
	return r.send(ctx, operator.Signal{Name: operator.SignalMessage, Content: text})
}

// queryWait bounds the state query that finds the digest pending at a
// marker (a worker answers it).
const queryWait = 5 * time.Second

// send gives the run the input sig as an update, pinned to the run's
// first execution (an approve or deny cannot land on another run started
// later under the same id), and returns the run's answer. When the run
// does not answer within UpdateWait it looks why (notAnswered).
func (r *Run) send(ctx context.Context, sig operator.Signal) (Answer, error) {
	if err := operator.CheckShape(sig); err != nil {
		return Answer{}, refused(r.id, sig, err.Error())
	}
	first, err := r.admit(ctx)
	if err != nil {
		return Answer{}, err
	}
	decision := sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny
	if decision && sig.Digest == "" {
		// Decide on the arguments pending now (the run checks them anyway),
		// and say which they were.
		qctx, cancel := context.WithTimeout(ctx, queryWait)
		st, err := r.State(qctx)
		cancel()
		if err == nil && st.Status == agent.StatusAwaitingApproval {
			for _, p := range st.Pending {
				if p.Marker == sig.Marker {
					sig.Digest = p.Digest
				}
			}
		}
	}
	ans := Answer{Digest: sig.Digest}
	payload := operator.PayloadOf(sig, first)
	updateID := fmt.Sprintf("%s-%s-%d", sig.Name, strings.NewReplacer("/", "_").Replace(sig.Marker+sig.Step), time.Now().UnixNano())
	uctx, cancel := context.WithTimeout(ctx, r.c.opts.UpdateWait)
	defer cancel()
	h, err := r.c.c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID: r.id, UpdateName: sig.Name, UpdateID: updateID, Args: []any{payload},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(uctx, &ans.State)
	}
	if err != nil && (notAdmitted(err) || errors.Is(err, context.DeadlineExceeded) || uctx.Err() != nil) && ctx.Err() == nil {
		return r.notAnswered(ctx, sig, updateID, err, payload, ans)
	}
	return ans, r.outcome(ctx, sig, err)
}

// outcome is the error of an update that failed with err: the run's
// refusal, a run that ended meanwhile, or err.
func (r *Run) outcome(ctx context.Context, sig operator.Signal, err error) error {
	var appErr *temporal.ApplicationError
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return nil
	case errors.As(err, &appErr):
		return refused(r.id, sig, appErr.Message())
	case errors.As(err, &nf):
		if _, aerr := r.admit(ctx); aerr != nil {
			return aerr // it ended since
		}
	}
	return r.c.wrap(sig.Name, r.id, err)
}

// notAdmitted reports whether the server refused to admit an update: it
// holds as many updates in flight for the run as it allows (10 by
// default), which it says with RESOURCE_EXHAUSTED.
func notAdmitted(err error) bool {
	var re *serviceerror.ResourceExhausted
	return errors.As(err, &re)
}

// notAnswered finds why an update was not answered within UpdateWait and
// acts on it. Not admitted (the run's update slots are full: the server's
// RESOURCE_EXHAUSTED, or no trace of the update id): the same input goes
// as a signal, which the server always takes (Answer.Signalled). Admitted
// but not answered: a *NotAnsweredError naming the cause, a worker or none
// polling the task queue. Answered meanwhile: the run's answer.
func (r *Run) notAnswered(ctx context.Context, sig operator.Signal, updateID string, cause error, payload any, ans Answer) (Answer, error) {
	admitted := !notAdmitted(cause)
	if admitted {
		err := r.updateOutcome(ctx, updateID, &ans.State)
		var nf *serviceerror.NotFound
		switch {
		case err == nil:
			return ans, nil
		case errors.As(err, &nf):
			admitted = false
		case !errors.Is(err, context.DeadlineExceeded):
			return Answer{}, r.outcome(ctx, sig, err)
		}
	}
	if !admitted {
		if err := r.c.c.SignalWorkflow(ctx, r.id, "", sig.Name, payload); err != nil {
			return Answer{}, fmt.Errorf("%s: the run admitted no update (too many in flight) and the signal failed too: %w", sig.Name, r.c.wrap("signal", r.id, err))
		}
		return Answer{Digest: ans.Digest, Signalled: true}, nil
	}
	e := &NotAnsweredError{RunID: r.id, Op: sig.Name, UpdateID: updateID, Wait: r.c.opts.UpdateWait, TaskQueue: r.c.opts.TaskQueue}
	resp, err := r.c.c.DescribeTaskQueue(ctx, r.c.opts.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	e.Pollers, e.PollersErr = len(resp.GetPollers()), err
	return Answer{}, e
}

// updateOutcome reads the outcome of an update by its id, waiting a few
// seconds at most: a *serviceerror.NotFound when the run never admitted
// it, context.DeadlineExceeded when it is admitted and not answered yet.
func (r *Run) updateOutcome(ctx context.Context, updateID string, st *State) error {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := r.c.c.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: r.id, UpdateID: updateID}).Get(pctx, st)
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return context.DeadlineExceeded
	}
	return err
}
