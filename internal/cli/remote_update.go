package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

var _ runs = (*Remote)(nil)

// Reconcile runs one operator command against the cluster. approve, deny,
// done and retry are updates: the run answers at once, and a refused input
// is an error here, not a silent no-op.
func (r *Remote) Reconcile(ctx context.Context, w io.Writer, args []string) error {
	return operate(ctx, w, r, args)
}

// send gives the run the input sig as an update to the execution to,
// which it is pinned to: an approve or deny cannot land on another run
// started later under the same id.
func (r *Remote) send(ctx context.Context, w io.Writer, cmd, runID, to string, sig operator.Signal, wait bool) error {
	payload := operator.PayloadOf(sig, to)
	var text *liveText
	if sig.Name == operator.SignalMessage && wait {
		// From before the message: its answer's text may come at once.
		text = r.followText(ctx, w, runID)
		defer text.Close()
		w = text
	}
	updateID := fmt.Sprintf("%s-%s-%d", sig.Name, strings.NewReplacer("/", "_").Replace(sig.Marker+sig.Step), time.Now().UnixNano())
	uctx, cancel := context.WithTimeout(ctx, updateWait)
	defer cancel()
	h, err := r.Conn.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID: runID, UpdateName: sig.Name, UpdateID: updateID, Args: []any{payload},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var st workflows.State
	if err == nil {
		err = h.Get(uctx, &st)
	}
	if err != nil && (notAdmitted(err) || errors.Is(err, context.DeadlineExceeded) || uctx.Err() != nil) && ctx.Err() == nil {
		if sent, err := r.notAnswered(ctx, w, cmd, runID, updateID, err, sig.Name, payload); sent || err != nil {
			return err
		}
		// Applied after all: the run answered the update id.
		if err := r.updateOutcome(ctx, runID, updateID, &st); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%s refused: %s", cmd, failureMessage(err))
	}
	if sig.Name == operator.SignalMessage {
		fmt.Fprintf(w, "message accepted by run %s for %s; it is now %s\n", runID, st.MessageStep, st.Status)
		if !wait {
			fmt.Fprintf(w, "  Web UI: %s\n", r.Link(runID))
			return nil
		}
		return r.answer(ctx, text, runID, st.MessageStep)
	}
	if sig.Digest != "" {
		fmt.Fprintf(w, "%s accepted by run %s (%s, arguments %s); it is now %s\n  Web UI: %s\n", cmd, runID, sig.Marker, sig.Digest, st.Status, r.Link(runID))
		return nil
	}
	fmt.Fprintf(w, "%s accepted by run %s; it is now %s\n  Web UI: %s\n", cmd, runID, st.Status, r.Link(runID))
	return nil
}

// updateWait bounds how long reconcile waits for the run to admit and
// answer an update before it looks why it did not.
const updateWait = 10 * time.Second

// notAdmitted reports whether the server refused to admit an update: it
// holds as many updates in flight for the run as it allows (10 by
// default), which it says with RESOURCE_EXHAUSTED.
func notAdmitted(err error) bool {
	var re *serviceerror.ResourceExhausted
	return errors.As(err, &re)
}

// notAnswered finds why an update was not answered within updateWait and
// acts on it. Not admitted (the run's update slots are full: the server's
// RESOURCE_EXHAUSTED, or no trace of the update id): the same input goes as
// a signal, which the server always takes, and one line says so (sent).
// Admitted but not answered: an error naming the cause, a worker or none
// polling the task queue. Answered meanwhile: neither (the caller reads
// the outcome).
func (r *Remote) notAnswered(ctx context.Context, w io.Writer, op, runID, updateID string, cause error, name string, payload any) (sent bool, err error) {
	admitted := !notAdmitted(cause)
	if admitted {
		var st workflows.State
		err := r.updateOutcome(ctx, runID, updateID, &st)
		var nf *serviceerror.NotFound
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &nf):
			admitted = false
		case !errors.Is(err, context.DeadlineExceeded):
			return false, fmt.Errorf("%s refused: %s", op, failureMessage(err))
		}
	}
	if !admitted {
		if err := r.Conn.SignalWorkflow(ctx, runID, "", name, payload); err != nil {
			return false, fmt.Errorf("%s: the run admitted no update (too many in flight) and the signal failed too: %w", op, err)
		}
		fmt.Fprintf(w, "%s sent to run %s as a signal: the run admits no more updates now (the server allows 10 in flight per run: watchers' polls or other operators hold them); the run applies it or records why it refused it, see %s\n", op, runID, r.op().reconcile("show", runID))
		return true, nil
	}
	pollers, perr := r.pollers(ctx)
	switch {
	case perr != nil:
		return false, fmt.Errorf("%s admitted by run %s but not answered within %s (update id %s; it applies when a worker takes it), and the task queue %s could not be described: %v", op, runID, updateWait, updateID, r.Settings.TaskQueue, perr)
	case pollers == 0:
		return false, fmt.Errorf("%s admitted by run %s but no worker polls task queue %s (update id %s): it applies when a worker starts", op, runID, r.Settings.TaskQueue, updateID)
	}
	poll := "poll"
	if pollers == 1 {
		poll = "polls"
	}
	return false, fmt.Errorf("%s admitted by run %s but not answered within %s although %s %s task queue %s (update id %s; it applies when the run's worker takes it): see %s", op, runID, updateWait, plural(pollers, "worker"), poll, r.Settings.TaskQueue, updateID, r.op().reconcile("show", runID))
}

// updateOutcome reads the outcome of an update by its id, waiting a few
// seconds at most: a *serviceerror.NotFound when the run never admitted
// it, context.DeadlineExceeded when it is admitted and not answered yet.
func (r *Remote) updateOutcome(ctx context.Context, runID, updateID string, st *workflows.State) error {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := r.Conn.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: runID, UpdateID: updateID}).Get(pctx, st)
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return context.DeadlineExceeded
	}
	return err
}

// pollers counts the workers polling the run's task queue for workflow
// tasks, as the server saw them lately.
func (r *Remote) pollers(ctx context.Context) (int, error) {
	resp, err := r.Conn.DescribeTaskQueue(ctx, r.Settings.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return 0, err
	}
	return len(resp.GetPollers()), nil
}
