package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/operator"
)

// runs is what the operator commands need of an engine: the runs on a
// Temporal cluster (*Remote) or in the local journal (*Local). Each
// command is written once, in operate, over it.
type runs interface {
	// op is how the commands printed for a person reach its runs.
	op() engine
	// list prints the runs that wait on a person.
	list(ctx context.Context, w io.Writer) error
	// show prints a run: its status, what unblocks it, its steps.
	show(ctx context.Context, w io.Writer, runID string) error
	// step returns one step's input and result; an error that matches
	// errNoStep when the run ran no such step (yet).
	step(ctx context.Context, runID, name string) (agent.Step, json.RawMessage, error)
	// content reads what a step's refs point to.
	content() (*execute.Executor, error)
	// standing is where a run stands now, with the calls pending.
	standing(ctx context.Context, runID string) (agent.Outcome, error)
	// send gives the run the input sig and prints what it answered; with
	// wait (message --wait) it waits for the answer and prints it. It
	// refuses an input for a run that is unknown or ended, and pins an
	// approve or deny without a digest to the arguments pending now.
	send(ctx context.Context, w io.Writer, cmd, runID string, sig operator.Signal, wait bool) error
	// cancel ends a run as Cancelled and prints how it ended.
	cancel(ctx context.Context, w io.Writer, runID string) error
}

// operate runs one operator command (reconcile's arguments) over an
// engine's runs.
func operate(ctx context.Context, w io.Writer, e runs, args []string) error {
	if err := CheckOperatorArgs(args); err != nil {
		return err
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return e.list(ctx, w)
		case "show":
			runID, name, _ := showArgs(args)
			if name != "" {
				return showStep(ctx, w, e, runID, name)
			}
			return e.show(ctx, w, runID)
		case "cancel":
			runID, _ := cancelArgs(args)
			return e.cancel(ctx, w, runID)
		case "fork", "eval":
			return forkCommand(ctx, w, e, args)
		}
	}
	runID, sig, err := ParseOperator(args)
	if err != nil {
		return err
	}
	return e.send(ctx, w, args[0], runID, sig, messageWait(args))
}

// showStep prints one step's whole input and output. A tool call waiting
// for approval is no step the run ran yet: it is printed whole with its
// digest.
func showStep(ctx context.Context, w io.Writer, e runs, runID, name string) error {
	step, res, err := e.step(ctx, runID, name)
	if errors.Is(err, errNoStep) && agent.IsToolStep(name) {
		if o, serr := e.standing(ctx, runID); serr == nil {
			if p, ok := pendingCall(o, name); ok {
				ex, err := e.content()
				if err != nil {
					return err
				}
				return printPending(ctx, w, e.op(), ex, runID, p)
			}
		}
	}
	if err != nil {
		return err
	}
	ex, err := e.content()
	if err != nil {
		return err
	}
	return printStep(ctx, w, ex, runID, step, res)
}

// noStep marks err as "the run ran no such step (yet)" (errNoStep)
// without changing what it says.
type noStep struct{ error }

func (e noStep) Is(target error) bool { return target == errNoStep }
func (e noStep) Unwrap() error        { return e.error }

// pendingCall returns the call pending at marker in o, if any.
func pendingCall(o agent.Outcome, marker string) (agent.Pending, bool) {
	if o.Status == agent.StatusAwaitingApproval {
		for _, p := range o.Pending {
			if p.Marker == marker {
				return p, true
			}
		}
	}
	return agent.Pending{}, false
}
