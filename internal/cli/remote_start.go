package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/shell"
	"github.com/agentrun/agentrun/workflows"
)

// Start starts the run runID with limits, or attaches to the run of that
// id when it has the same prompt (an empty prompt attaches to any existing
// run; it keeps its own limits), and with wait follows it until it ends.
func (r *Remote) Start(ctx context.Context, w io.Writer, runID, prompt string, limits Limits, wait bool) error {
	if err := operator.ValidRunID(runID); err != nil {
		return usagef("%v", err)
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	desc, err := r.describe(ctx, runID)
	attached := err == nil
	switch {
	case errors.Is(err, operator.ErrUnknownRun) && strings.TrimSpace(prompt) == "":
		return usagef("run %s does not exist: give a prompt to start it", runID)
	case err != nil && !errors.Is(err, operator.ErrUnknownRun):
		return err
	case attached && limits.Explicit:
		return errLimitsOfExisting(r.op(), runID)
	}
	if strings.TrimSpace(prompt) != "" {
		in := workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: limits.MaxTurns, MaxTokens: limits.MaxTokens, MaxCost: limits.MaxCost}
		if limits.Session {
			in.Session, in.SessionIdle = true, limits.SessionIdle.String()
		}
		in.Stream = limits.Stream
		hash := workflows.InputHash(in.Messages)
		if attached && desc.hash != hash {
			return r.errOtherPrompt(runID)
		}
		if !attached {
			// Another starter may win the race: the conflict policy attaches.
			_, err := r.Conn.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID:                       runID,
				TaskQueue:                r.Settings.TaskQueue,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
				StaticSummary:            workflows.Summary(prompt),
				StaticDetails:            workflows.StaticDetails(runID),
				Memo:                     map[string]any{workflows.MemoInputHash: hash},
				TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.StatusKey.ValueSet(string(agent.StatusRunning))),
			}, workflows.WorkflowName, in)
			if err != nil {
				return fmt.Errorf("start run %s: %w", runID, err)
			}
			if desc, err = r.describe(ctx, runID); err != nil {
				return err
			}
			if desc.hash != hash {
				return r.errOtherPrompt(runID)
			}
		}
	}
	verb := "started"
	if attached {
		verb = "attached to"
	}
	fmt.Fprintf(w, "%s run %s\n  Web UI: %s\n", verb, runID, r.Link(runID))
	if !wait {
		return nil
	}
	return r.follow(ctx, w, runID)
}

func (r *Remote) errOtherPrompt(runID string) error {
	return fmt.Errorf("run %s exists with another prompt: %w; attach with no prompt (%s --id %s) or choose another --id", runID, operator.ErrInputMismatch, r.op().cmds.Starter, shell.Quote(runID))
}
