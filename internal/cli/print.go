package cli

import (
	"fmt"
	"io"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/shell"
	"github.com/agentrun/agentrun/workflows"
)

// engine is how the commands printed for one engine reach a run: the
// programs as Commands names them, and on Temporal the namespace too.
type engine struct {
	cmds      Commands
	local     bool
	namespace string // on Temporal; "" or "default" is not named
	// following is set for a local run that a driver follows (starter
	// --local --follow): it goes on by itself once a decision is recorded.
	following bool
	// asked is set when show asked the local run's lock who drives it:
	// driver is then that process, or nil when nothing runs the run.
	asked  bool
	driver *journal.BusyError
}

func localEngine(c Commands) engine { return engine{cmds: c.or(), local: true} }

func temporalEngine(c Commands, namespace string) engine {
	return engine{cmds: c.or(), namespace: namespace}
}

// reconcile is a reconcile command line for this engine.
func (o engine) reconcile(words ...string) string {
	line := o.cmds.Reconcile
	if o.local {
		line += " --local"
	}
	for _, w := range words {
		line += " " + shell.Quote(w)
	}
	return line
}

// signal is the Temporal CLI's equivalent of a reconcile command; "" for
// the local engine.
func (o engine) signal(runID, name string, payload any) string {
	if o.local {
		return ""
	}
	return workflows.SignalCommand(o.cmds.Temporal, o.namespace, runID, name, payload)
}

// resume is the command that drives a local run on after a decision.
func (o engine) resume(runID string) string {
	return fmt.Sprintf("%s --local --id %s", o.cmds.Starter, shell.Quote(runID))
}

// plural is n and word, with an s when n is not 1: "1 step", "2 steps".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// printOutcome tells a person where a run stands and, when it waits on
// them, the exact commands that unblock it.
func printOutcome(w io.Writer, op engine, runID string, o agent.Outcome) {
	switch o.Status {
	case agent.StatusCompleted:
		fmt.Fprintf(w, "run %s: Completed\n%s\n", runID, o.Answer)
		if o.CutOff {
			fmt.Fprintf(w, "  cut off: %s\n", agent.CutOffNote)
		}
		if o.Empty {
			fmt.Fprintf(w, "  empty: %s\n", agent.EmptyNote)
		}
	case agent.StatusAwaitingApproval:
		verb := "wait"
		if len(o.Pending) == 1 {
			verb = "waits"
		}
		fmt.Fprintf(w, "run %s: AwaitingApproval (%s %s for a person)\n", runID, plural(len(o.Pending), "call"), verb)
		printUnblock(w, op, runID, o)
	case agent.StatusIndeterminate:
		fmt.Fprintf(w, "run %s: Indeterminate at %s\n", runID, o.Step)
		printUnblock(w, op, runID, o)
	case agent.StatusBudgetExceeded:
		fmt.Fprintf(w, "run %s: BudgetExceeded: %s\n", runID, o.Reason)
		printUnblock(w, op, runID, o)
	case agent.StatusIdle:
		fmt.Fprintf(w, "run %s: Idle (a session: it answered and waits for a message)\n%s\n", runID, o.Answer)
		printUnblock(w, op, runID, o)
	case agent.StatusFailed:
		fmt.Fprintf(w, "run %s: Failed: %s\n", runID, o.Reason)
	case agent.StatusCancelled:
		fmt.Fprintf(w, "run %s: Cancelled: %s\n", runID, o.Reason)
	default:
		fmt.Fprintf(w, "run %s: %s\n", runID, o.Status)
	}
}

// printUnblock prints what a run waits on and the exact commands that
// unblock it, the same way for both engines: the starter's outcome, --wait
// and reconcile show all print it. On Temporal each command is followed by
// its Temporal CLI equivalent; a local run is resumed afterwards.
func printUnblock(w io.Writer, op engine, runID string, o agent.Outcome) {
	or := func(runID, name string, payload any) {
		if cmd := op.signal(runID, name, payload); cmd != "" {
			fmt.Fprintf(w, "         or: %s\n", cmd)
		}
	}
	switch o.Status {
	case agent.StatusAwaitingApproval:
		for _, p := range o.Pending {
			fmt.Fprintf(w, "  marker %s\n    tool: %s\n    args: %s\n", p.Marker, p.Tool, p.ArgsText())
			if p.Digest != "" {
				fmt.Fprintf(w, "    digest: %s\n", p.Digest)
			}
			if p.ArgsRef != nil {
				fmt.Fprintf(w, "    whole args: %s\n", op.reconcile("show", runID, "--step", p.Marker))
			}
			fmt.Fprintf(w, "    approve: %s\n", op.reconcile("approve", runID, p.Marker))
			or(runID, operator.SignalApprove, operator.ApprovePayload(p.Marker))
			fmt.Fprintf(w, "    deny:    %s\n", op.reconcile("deny", runID, p.Marker, "REASON"))
			or(runID, operator.SignalDeny, operator.DenyPayload(p.Marker, "REASON"))
		}
	case agent.StatusIndeterminate:
		fmt.Fprintf(w, "  the write %s started and never recorded its result; it may or may not have taken effect.\n", o.Step)
		if o.Reason != "" {
			fmt.Fprintf(w, "  %s\n", o.Reason) // the cause: its probe's answer, the guard's message
		}
		fmt.Fprintf(w, "  check the world, then either record what happened:\n    done:    %s\n", op.reconcile("done", runID, o.Step, "RESULT"))
		or(runID, operator.SignalReconcile, operator.DonePayload(o.Step, "RESULT"))
		fmt.Fprintf(w, "  or, only if it did not take effect, run it once more:\n    retry:   %s\n", op.reconcile("retry", runID, o.Step))
		or(runID, operator.SignalReconcile, operator.RetryPayload(o.Step))
	case agent.StatusIdle:
		if op.local && !op.following {
			fmt.Fprintf(w, "  send a message: %s\n  then resume the session: %s --follow\n", op.reconcile("message", runID, "TEXT..."), op.resume(runID))
			return
		}
		fmt.Fprintf(w, "  send a message: %s --wait\n", op.reconcile("message", runID, "TEXT..."))
		or(runID, operator.SignalMessage, operator.MessagePayload("TEXT"))
		if op.following {
			fmt.Fprintln(w, followLine)
		}
		return
	case agent.StatusBudgetExceeded:
		fmt.Fprintf(w, "  raise its limits (above what it used; 0 keeps one), then it goes on:\n    budget:  %s MAX_TURNS [MAX_TOKENS [MAX_COST]]\n", op.reconcile("budget", runID))
	default:
		return
	}
	switch {
	case op.following:
		fmt.Fprintln(w, followLine)
	case op.local:
		fmt.Fprintf(w, "  then resume the run: %s\n", op.resume(runID))
	}
}

// followLine is what a following local driver says under the commands
// that unblock its run.
const followLine = "  this driver follows the run: it goes on as soon as that is recorded (Ctrl-C leaves the run as it is)"

// runView is a run as show prints it, from either engine.
type runView struct {
	Header string
	// Stopped says why the local driver stopped a Running run, and how
	// to resume it ("" if it did not).
	Stopped string
	Outcome agent.Outcome // status, pending calls, indeterminate step, reason, answer
	Steps   []string      // one line each
	Tail    []string      // further lines, after the steps
}

// printRun prints a run for reconcile show, with what unblocks it.
func printRun(w io.Writer, op engine, runID string, v runView) {
	fmt.Fprintln(w, v.Header)
	if v.Stopped != "" {
		fmt.Fprintf(w, "  %s\n", v.Stopped)
	}
	printUnblock(w, op, runID, v.Outcome)
	cut, empty := "", ""
	if v.Outcome.CutOff {
		cut = agent.CutOffNote
	}
	if v.Outcome.Empty {
		empty = agent.EmptyNote
	}
	reason := v.Outcome.Reason
	if v.Outcome.Status == agent.StatusIndeterminate {
		reason = "" // printUnblock said it
	}
	for _, kv := range [][2]string{{"reason", reason}, {"answer", v.Outcome.Answer}, {"cut off", cut}, {"empty", empty}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
		}
	}
	for _, l := range append(v.Steps, v.Tail...) {
		fmt.Fprintln(w, "  "+l)
	}
}
