package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

var _ runs = (*Remote)(nil)

// Reconcile runs one operator command against the cluster. approve, deny,
// done and retry are updates: the run answers at once, and a refused input
// is an error here, not a silent no-op.
func (r *Remote) Reconcile(ctx context.Context, w io.Writer, args []string) error {
	return operate(ctx, w, r, args)
}

// client is the typed client over the connection, which every command
// that changes a run goes through.
func (r *Remote) client() *agentrun.Client {
	c, _ := agentrun.NewClient(r.Conn, agentrun.ClientOptions{TaskQueue: r.Settings.TaskQueue}) // errs only on a nil client or a negative wait
	return c
}

// send gives the run the input sig through the client (an update, or a
// signal when the run admits no more updates) and prints its answer.
func (r *Remote) send(ctx context.Context, w io.Writer, cmd, runID string, sig operator.Signal, wait bool) error {
	var text *liveText
	if sig.Name == operator.SignalMessage && wait {
		// From before the message: its answer's text may come at once.
		text = r.followText(ctx, w, runID)
		defer text.Close()
		w = text
	}
	run := r.client().Run(runID)
	var ans agentrun.Answer
	var err error
	switch {
	case sig.Name == operator.SignalApprove:
		ans, err = run.Approve(ctx, sig.Marker, sig.Digest)
	case sig.Name == operator.SignalDeny:
		ans, err = run.Deny(ctx, sig.Marker, sig.Digest, sig.Reason)
	case sig.Name == operator.SignalReconcile && sig.Outcome == operator.OutcomeDone:
		ans, err = run.Done(ctx, sig.Step, sig.Result)
	case sig.Name == operator.SignalReconcile:
		ans, err = run.Retry(ctx, sig.Step)
	case sig.Name == operator.SignalBudget:
		ans, err = run.Budget(ctx, agent.Budget{MaxTurns: sig.MaxTurns, MaxTokens: sig.MaxTokens, MaxCost: sig.MaxCost})
	case sig.Name == operator.SignalMessage:
		ans, err = run.Message(ctx, sig.Content)
	default:
		return usagef("unknown command %q: want %s", cmd, commandNames)
	}
	if err != nil {
		return r.sendError(cmd, runID, err)
	}
	st := ans.State
	switch {
	case ans.Signalled:
		fmt.Fprintf(w, "%s sent to run %s as a signal: the run admits no more updates now (the server allows 10 in flight per run: watchers' polls or other operators hold them); the run applies it or records why it refused it, see %s\n", cmd, runID, r.op().reconcile("show", runID))
		return nil
	case sig.Name == operator.SignalMessage:
		fmt.Fprintf(w, "message accepted by run %s for %s; it is now %s\n", runID, st.MessageStep, st.Status)
		if !wait {
			fmt.Fprintf(w, "  Web UI: %s\n", r.Link(runID))
			return nil
		}
		return r.answer(ctx, text, runID, st.MessageStep)
	case ans.Digest != "":
		fmt.Fprintf(w, "%s accepted by run %s (%s, arguments %s); it is now %s\n  Web UI: %s\n", cmd, runID, sig.Marker, ans.Digest, st.Status, r.Link(runID))
		return nil
	}
	fmt.Fprintf(w, "%s accepted by run %s; it is now %s\n  Web UI: %s\n", cmd, runID, st.Status, r.Link(runID))
	return nil
}

// sendError says in the reconcile tool's words why the client did not
// get the run's answer to cmd.
func (r *Remote) sendError(cmd, runID string, err error) error {
	var ended *agentrun.EndedError
	var refused *agentrun.RefusedError
	var late *agentrun.NotAnsweredError
	switch {
	case errors.As(err, &ended):
		return fmt.Errorf("%s refused: run %s is already %s; nothing changes a run after it ended", cmd, runID, ended.Status)
	case errors.As(err, &refused):
		return fmt.Errorf("%s refused: %s", cmd, refused.Reason)
	case errors.As(err, &late) && late.PollersErr == nil && late.Pollers > 0:
		poll := "poll"
		if late.Pollers == 1 {
			poll = "polls"
		}
		return fmt.Errorf("%s admitted by run %s but not answered within %s although %s %s task queue %s (update id %s; it applies when the run's worker takes it): see %s", cmd, runID, late.Wait, plural(late.Pollers, "worker"), poll, late.TaskQueue, late.UpdateID, r.op().reconcile("show", runID))
	case errors.As(err, &late):
		named := *late
		named.Op = cmd
		return &named
	}
	return r.clientError(err, runID)
}

// clientError names an unknown run as describe does; any other error of
// the client is its own.
func (r *Remote) clientError(err error, runID string) error {
	if errors.Is(err, agentrun.ErrRunNotFound) {
		return fmt.Errorf("run %s not found in namespace %s: %w", runID, r.Conn.Namespace, operator.ErrUnknownRun)
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
