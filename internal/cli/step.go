package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/operator"
)

// errNoStep: a run's history has no activity for the step.
var errNoStep = errors.New("no activity ran it")

// stepFlag is how show asks for one step.
const stepFlag = "--step"

// showArgs splits "show RUN [--step STEP]" and checks them.
func showArgs(args []string) (runID, step string, err error) {
	rest := args[1:]
	if len(rest) == 2 && strings.HasPrefix(rest[1], stepFlag+"=") {
		rest = []string{rest[0], stepFlag, strings.TrimPrefix(rest[1], stepFlag+"=")}
	}
	switch {
	case len(rest) == 1:
	case len(rest) == 3 && rest[1] == stepFlag:
		step = rest[2]
		if !agent.ValidStep(step) {
			return "", "", usagef("show: step %q is not a step name; want %s", step, agent.StepFormat)
		}
	default:
		return "", "", usagef("show takes RUN [--step STEP]; got %q", strings.Join(rest, " "))
	}
	if err := operator.ValidRunID(rest[0]); err != nil {
		return "", "", usagef("%v", err)
	}
	return rest[0], step, nil
}

// printStep prints a step's whole input and output, reading the values kept
// by reference from the content store.
func printStep(ctx context.Context, w io.Writer, store *execute.Executor, runID string, step agent.Step, result json.RawMessage) error {
	fmt.Fprintf(w, "run %s, step %s (%s)\n", runID, step.Name, step.Kind)
	message := func(i int, m agent.Message) {
		label := string(m.Role)
		if m.Step != "" {
			label += " " + m.Step
		}
		if m.IsError {
			label += " (error)"
		}
		fmt.Fprintf(w, "--- %d. %s\n", i, label)
		if m.Content != "" {
			fmt.Fprintln(w, m.Content)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "[call %s %s] %s\n", c.ID, c.Name, c.Args)
		}
	}
	switch {
	case step.Model != nil:
		past, err := store.Messages(ctx, step.Name, step.Model.Conversation)
		if err != nil {
			return err
		}
		added, err := store.Resolve(ctx, step.Name, step.Model.New)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "input: %s (%d before the step, %d new)\n", plural(len(past)+len(added), "message"), len(past), len(added))
		for i, m := range append(past, added...) {
			message(i+1, m)
		}
		if result == nil {
			fmt.Fprintln(w, "output: none recorded yet")
			return nil
		}
		reply, err := agent.DecodeModelReply(result)
		if err != nil {
			return fmt.Errorf("step %s: recorded result is not a model reply: %w", step.Name, err)
		}
		msgs, err := store.Resolve(ctx, step.Name, []agent.Message{reply.Message})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "output: %s, finish %s, %d input and %d output tokens%s", reply.Model, reply.FinishReason, reply.Usage.InputTokens, reply.Usage.OutputTokens, cachedNote(reply.Usage))
		if reply.Elided > 0 {
			fmt.Fprintf(w, ", %d oldest tool results left out to fit the context budget", reply.Elided)
		}
		fmt.Fprintln(w)
		if reply.Settings != nil {
			fmt.Fprintf(w, "settings: %s\n", reply.Settings)
		}
		if reply.CutOff() {
			fmt.Fprintf(w, "cut off: %s\n", agent.CutOffNote)
		}
		if reply.Empty() {
			fmt.Fprintf(w, "empty: %s\n", agent.EmptyNote)
		}
		message(len(past)+len(added)+1, msgs[0])
	case step.Call != nil:
		prepared, err := store.Prepare(ctx, step)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "input: %s(%s)\n", step.Call.Name, prepared.Call.Args)
		if result == nil {
			fmt.Fprintln(w, "output: none recorded yet")
			return nil
		}
		res, err := agent.DecodeToolResult(result)
		if err != nil {
			return fmt.Errorf("step %s: recorded result is not a tool result: %w", step.Name, err)
		}
		text := res.Content
		if res.ContentRef != nil {
			b, err := store.Value(ctx, step.Name, res.ContentRef)
			if err != nil {
				return err
			}
			text = string(b)
		}
		label := "output"
		if res.IsError {
			label = "output (error)"
		}
		fmt.Fprintf(w, "%s:\n%s\n", label, text)
	}
	return nil
}

// printPending prints a tool call that waits for a person: its whole
// arguments (read from the content store when kept by reference, and
// checked against the digest), the digest, and the commands that decide
// on exactly these arguments.
func printPending(ctx context.Context, w io.Writer, op engine, store *execute.Executor, runID string, p agent.Pending) error {
	args, err := store.PendingArgs(ctx, p)
	if errors.Is(err, execute.ErrOtherBytes) {
		return fmt.Errorf("%w; check AGENTRUN_JOURNAL names the workers' store", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s, step %s (awaiting approval)\n", runID, p.Marker)
	fmt.Fprintf(w, "input: %s(%s)\n", p.Tool, args)
	fmt.Fprintf(w, "digest: %s (%d bytes of arguments)\n", p.Digest, len(args))
	fmt.Fprintln(w, "output: none: the call waits for a person to approve or deny it")
	fmt.Fprintf(w, "  approve: %s\n", op.reconcile("approve", runID, p.Marker, "--digest", p.Digest))
	if cmd := op.signal(runID, operator.SignalApprove, operator.ApprovePayloadOf(p.Marker, p.Digest, "")); cmd != "" {
		fmt.Fprintf(w, "       or: %s\n", cmd)
	}
	fmt.Fprintf(w, "  deny:    %s\n", op.reconcile("deny", runID, p.Marker, "REASON", "--digest", p.Digest))
	if op.local {
		fmt.Fprintf(w, "  then resume the run: %s\n", op.resume(runID))
	}
	return nil
}

// findStep finds a step's activity in a run's history, newest execution
// first, following continue-as-new back: its input and, when it completed,
// its result. For a write retried under a new generation, the newest.
func (r *Remote) findStep(ctx context.Context, runID, name string) (agent.Step, json.RawMessage, error) {
	dc := r.Conn.Converter() // the payloads are encrypted when a codec is set
	for execution := ""; ; {
		it := r.Conn.GetWorkflowHistory(ctx, runID, execution, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var first *historypb.HistoryEvent
		var in *activities.StepInput
		var scheduled int64
		var result json.RawMessage
		for it.HasNext() {
			e, err := it.Next()
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return agent.Step{}, nil, fmt.Errorf("run %s not found in namespace %s: %w", runID, r.Conn.Namespace, operator.ErrUnknownRun)
			}
			if err != nil {
				return agent.Step{}, nil, fmt.Errorf("history of run %s: %w", runID, err)
			}
			if first == nil {
				first = e
			}
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
				if id := a.GetActivityId(); id == name || strings.HasPrefix(id, name+"#") {
					var s activities.StepInput
					if p := a.GetInput().GetPayloads(); len(p) == 1 {
						err := dc.FromPayload(p[0], &s)
						if codec.IsKeyError(err) {
							return agent.Step{}, nil, fmt.Errorf("history of run %s: input of step %s: %w", runID, name, err)
						}
						if err == nil {
							in, scheduled, result = &s, e.GetEventId(), nil
						}
					}
				}
			}
			if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduled {
				if p := a.GetResult().GetPayloads(); len(p) == 1 {
					var raw json.RawMessage
					if err := dc.FromPayload(p[0], &raw); err != nil {
						return agent.Step{}, nil, fmt.Errorf("history of run %s: result of step %s: %w", runID, name, err)
					}
					result = raw
				}
			}
		}
		if in != nil {
			return in.Step, result, nil
		}
		execution = first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if execution == "" {
			return agent.Step{}, nil, fmt.Errorf("run %s has no step %s (yet): %w", runID, name, errNoStep)
		}
	}
}
