package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentrun/agentrun"
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
		hash := workflows.InputHash(agent.UserMessages(prompt))
		if attached && desc.hash != hash {
			return r.errOtherPrompt(runID)
		}
		if !attached {
			opts := agentrun.StartOptions{ID: runID, Prompt: prompt, MaxTurns: limits.MaxTurns, MaxTokens: limits.MaxTokens, MaxCost: limits.MaxCost, Stream: limits.Stream}
			if limits.Session {
				opts.Session, opts.SessionIdle = true, limits.SessionIdle
			}
			// Another starter may win the race: then this one attaches.
			if _, err := r.client().Start(ctx, opts); err != nil && !errors.Is(err, agentrun.ErrRunExists) {
				return err
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
