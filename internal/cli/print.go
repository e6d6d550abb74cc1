package cli

import (
	"fmt"
	"io"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/shell"
)

// reconcileCmd is how an operator calls the reconcile tool in one mode.
type reconcileCmd string

const (
	localCmd    reconcileCmd = "go run ./reconcile --local"
	temporalCmd reconcileCmd = "go run ./reconcile"
)

func (c reconcileCmd) approve(run, marker string) string {
	return fmt.Sprintf("%s approve %s %s", c, shell.Quote(run), shell.Quote(marker))
}

func (c reconcileCmd) deny(run, marker string) string {
	return fmt.Sprintf("%s deny %s %s 'REASON'", c, shell.Quote(run), shell.Quote(marker))
}

func (c reconcileCmd) done(run, step string) string {
	return fmt.Sprintf("%s done %s %s 'RESULT'", c, shell.Quote(run), shell.Quote(step))
}

func (c reconcileCmd) retry(run, step string) string {
	return fmt.Sprintf("%s retry %s %s", c, shell.Quote(run), shell.Quote(step))
}

func (c reconcileCmd) budget(run string) string {
	return fmt.Sprintf("%s budget %s MAX_TURNS [MAX_TOKENS]", c, shell.Quote(run))
}

// printOutcome tells a person where a run stands and, when it waits on
// them, the exact commands that unblock it.
func printOutcome(w io.Writer, cmd reconcileCmd, runID string, o agent.Outcome) {
	switch o.Status {
	case agent.StatusCompleted:
		fmt.Fprintf(w, "run %s: Completed\n%s\n", runID, o.Answer)
	case agent.StatusAwaitingApproval:
		fmt.Fprintf(w, "run %s: AwaitingApproval (%d call(s) wait for a person)\n", runID, len(o.Pending))
		for _, p := range o.Pending {
			fmt.Fprintf(w, "  marker %s\n    tool: %s\n    args: %s\n    approve: %s\n    deny:    %s\n",
				p.Marker, p.Tool, p.ArgsText(), cmd.approve(runID, p.Marker), cmd.deny(runID, p.Marker))
		}
	case agent.StatusIndeterminate:
		fmt.Fprintf(w, "run %s: Indeterminate at %s\n", runID, o.Step)
		fmt.Fprintf(w, "  the write started and never recorded its result; it may or may not have taken effect.\n")
		fmt.Fprintf(w, "  check the world, then either record what happened:\n    %s\n", cmd.done(runID, o.Step))
		fmt.Fprintf(w, "  or run it once more:\n    %s\n", cmd.retry(runID, o.Step))
	case agent.StatusBudgetExceeded:
		fmt.Fprintf(w, "run %s: BudgetExceeded: %s\n", runID, o.Reason)
		fmt.Fprintf(w, "  raise its limits (above what it used; 0 keeps one), then it goes on:\n    %s\n", cmd.budget(runID))
	case agent.StatusFailed:
		fmt.Fprintf(w, "run %s: Failed: %s\n", runID, o.Reason)
	default:
		fmt.Fprintf(w, "run %s: %s\n", runID, o.Status)
	}
}

// runView is a run as show prints it, from either engine.
type runView struct {
	Header        string
	Pending       []agent.Pending
	Indeterminate string
	Reason        string
	Answer        string
	Steps         []string // one line each
	Tail          []string // further lines, after the steps
}

func printRun(w io.Writer, v runView) {
	fmt.Fprintln(w, v.Header)
	for _, p := range v.Pending {
		fmt.Fprintf(w, "  pending %s: %s %s\n", p.Marker, p.Tool, p.ArgsText())
	}
	for _, kv := range [][2]string{{"indeterminate", v.Indeterminate}, {"reason", v.Reason}, {"answer", v.Answer}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
		}
	}
	for _, l := range append(v.Steps, v.Tail...) {
		fmt.Fprintln(w, "  "+l)
	}
}
