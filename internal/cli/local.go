package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
)

// Local is the local engine: a journal store (a folder or PostgreSQL), a
// model and the tools.
type Local struct {
	Engine *local.Engine
	Exec   *execute.Executor
	// Commands name the programs in printed commands (Settings.Commands).
	Commands Commands
	// Retry is the policy of model calls and reads that fail
	// (Settings.LocalRetry). Zero: one attempt each.
	Retry execute.Retry
}

// OpenLocal builds the local engine from the settings. Close it when done.
func OpenLocal(ctx context.Context, s Settings) (*Local, error) {
	store, err := s.JournalStore(ctx)
	if err != nil {
		return nil, err
	}
	exec, err := s.Executor(ctx)
	if err != nil {
		return nil, err
	}
	return &Local{
		Engine:   &local.Engine{Store: store, Loop: agent.Loop{Tools: exec.Tools.Specs(), FailOnCut: exec.FailOnCut, FailOnEmpty: exec.FailOnEmpty}, Probe: exec.Probe},
		Exec:     exec,
		Commands: s.Commands,
		Retry:    s.LocalRetry(),
	}, nil
}

// Close stops the tools' servers.
func (l *Local) Close() error { return l.Exec.Tools.Close() }

// StartLocal starts or resumes runID and drives it until it completes or
// needs a person. With an empty prompt it resumes an existing run. A new
// run gets limits; an existing one keeps its own. With limits.Stream set
// to true it prints the model's text to w as the model writes it. A model
// call or read that fails with a transient error is tried again (the
// journal's Retry), each retry printed to w as one line; when the step
// fails for good the run stops, its journal says why, and StartLocal
// prints that with the command that resumes it and returns the
// *local.StoppedError (ExitStopped).
func (l *Local) StartLocal(ctx context.Context, w io.Writer, runID, prompt string, limits Limits) error {
	if err := operator.ValidRunID(runID); err != nil {
		return usagef("%v", err)
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	recorded, err := l.input(runID)
	exists := err == nil
	if err != nil && !errors.Is(err, operator.ErrUnknownRun) {
		return err
	}
	input := recorded
	if strings.TrimSpace(prompt) != "" {
		input = agent.UserMessages(prompt)
	} else if !exists {
		return usagef("run %s does not exist: give a prompt to start it", runID)
	}
	if exists && limits.Explicit {
		return errLimitsOfExisting(l.op(), runID)
	}
	l.Engine.Limits = limits.Budget
	if limits.Session {
		l.Engine.Session = limits.SessionIdle // a new run's; an existing one keeps its own
	}
	l.Engine.Follow = limits.Follow
	if limits.Follow {
		l.Engine.OnWait = l.onWait(w, runID)
	}
	var exec agent.Executor = l.Exec
	if limits.Stream != nil && *limits.Stream {
		exec = localText{Executor: l.Exec, w: w}
	}
	l.Engine.Retry = l.Retry
	l.Engine.OnRetry = func(r local.Retrying) { fmt.Fprintln(w, r.String()) }
	o, err := l.Engine.Drive(ctx, runID, input, exec)
	var unfollowed *local.FollowStoppedError
	if errors.As(err, &unfollowed) {
		return l.stoppedFollowing(w, runID, unfollowed)
	}
	var stopped *local.StoppedError
	if errors.As(err, &stopped) {
		fmt.Fprintf(w, "run %s: %s; resume with %s\n", runID, stopped.Stop, l.op().resume(runID))
		return err
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return fmt.Errorf("run %s: interrupted (%v); nothing is lost: resume it with %s", runID, cerr, l.op().resume(runID))
	}
	if errors.Is(err, operator.ErrInputMismatch) {
		return fmt.Errorf("run %s exists with another prompt; resume it with no prompt (%s) or choose another --id", runID, l.op().resume(runID))
	}
	if errors.Is(err, journal.ErrLockLost) {
		return fmt.Errorf("%w; run %s to resume", err, l.op().resume(runID))
	}
	if err != nil {
		return err
	}
	printOutcome(w, l.op(), runID, o)
	return outcomeErr(o)
}

// input returns the recorded input of an existing run.
func (l *Local) input(runID string) ([]agent.Message, error) {
	recs, err := l.Engine.Store.Load(runID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || recs[0].Type != journal.RunStarted {
		return nil, fmt.Errorf("run %s: %w", runID, operator.ErrUnknownRun)
	}
	return recs[0].Input, nil
}

// ReconcileUsage is the reconcile tool's command summary.
const ReconcileUsage = `commands:
  list                       runs waiting on a person (with --local, stopped runs too)
  show RUN                   status, pending markers and steps of a run
  show RUN --step STEP       one step's whole input and output (e.g. llm/7, tool/7/0/echo)
  approve RUN MARKER [--digest D]
                             let a gated tool call run; with --digest (as show prints
                             it) only while those arguments are pending
  deny RUN MARKER REASON [--digest D]
                             refuse it; the model reads the reason
  done RUN STEP RESULT       settle an indeterminate write: it took effect with RESULT
  retry RUN STEP             settle an indeterminate write: run it once more
  cancel RUN                 end the run as Cancelled: a running model call or read stops;
                             a write that was running is named, as it may have taken effect
  budget RUN MAX_TURNS [MAX_TOKENS]
                             raise a run's limits on model calls and tokens
                             (each above what it used; 0 keeps a limit)
  message RUN TEXT... [--wait]
                             add a user message before the run's next model call
                             (wakes an Idle session); --wait prints the answer to it`

// operatorArgs names the arguments of each operator command.
var operatorArgs = map[string]string{
	operator.SignalApprove: "RUN MARKER [--digest D]",
	operator.SignalDeny:    "RUN MARKER REASON [--digest D]",
	"done":                 "RUN STEP RESULT",
	"retry":                "RUN STEP",
}

// commandNames are the reconcile tool's commands, for error messages.
const commandNames = "list, show, approve, deny, done, retry, budget or message"

// ParseOperator turns reconcile arguments into a signal, or says in one
// line what is wrong. It does not handle list and show.
func ParseOperator(args []string) (runID string, sig operator.Signal, err error) {
	if len(args) == 0 {
		return "", sig, usagef("missing command: want %s", commandNames)
	}
	switch args[0] {
	case operator.SignalBudget:
		return parseBudget(args)
	case operator.SignalMessage:
		return parseMessage(args)
	}
	spec, ok := operatorArgs[args[0]]
	if !ok {
		return "", sig, usagef("unknown command %q: want %s", args[0], commandNames)
	}
	var digest string
	if args[0] == operator.SignalApprove || args[0] == operator.SignalDeny {
		if args, digest, err = digestFlag(args); err != nil {
			return "", sig, err
		}
	}
	n := len(strings.Fields(strings.Split(spec, " [")[0])) // options not counted
	if len(args)-1 < n || (len(args)-1 > n && args[0] != operator.SignalDeny) {
		return "", sig, usagef("%s takes %s; got %d argument(s)", args[0], spec, len(args)-1)
	}
	runID = args[1]
	if err := operator.ValidRunID(runID); err != nil {
		return "", sig, usagef("%v", err)
	}
	switch args[0] {
	case operator.SignalApprove:
		sig = operator.Signal{Name: operator.SignalApprove, Marker: args[2]}
	case operator.SignalDeny:
		sig = operator.Signal{Name: operator.SignalDeny, Marker: args[2], Reason: strings.Join(args[3:], " ")}
	case "done":
		sig = operator.Signal{Name: operator.SignalReconcile, Step: args[2], Outcome: operator.OutcomeDone, Result: args[3]}
	case "retry":
		sig = operator.Signal{Name: operator.SignalReconcile, Step: args[2], Outcome: operator.OutcomeRetry}
	}
	sig.Digest = digest
	if sig.Name == operator.SignalReconcile {
		err = operator.CheckReconcile(sig)
	} else {
		err = operator.CheckDecision(sig)
	}
	if err != nil {
		return "", sig, usagef("%v", err)
	}
	return runID, sig, nil
}

// digestFlag takes --digest D (or --digest=D) out of the arguments of an
// approve or deny: the arguments digest the decision is pinned to.
func digestFlag(args []string) ([]string, string, error) {
	var rest []string
	digest, seen := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if name != "--digest" && name != "-digest" {
			rest = append(rest, a)
			continue
		}
		if seen {
			return nil, "", usagef("%s: --digest is given twice; want it once", args[0])
		}
		seen = true
		if !hasValue {
			if i+1 == len(args) {
				return nil, "", usagef("%s: --digest needs a value; want %s", args[0], agent.DigestFormat)
			}
			i++
			value = args[i]
		}
		if !agent.ValidDigest(value) {
			return nil, "", usagef("%s: --digest %q: want %s", args[0], agent.Clip(value, 80), agent.DigestFormat)
		}
		digest = value
	}
	return rest, digest, nil
}

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

// ReconcileLocal runs one operator command against the local journal.
func (l *Local) ReconcileLocal(ctx context.Context, w io.Writer, args []string) error {
	if err := CheckOperatorArgs(args); err != nil {
		return err
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	if len(args) > 0 {
		switch args[0] {
		case "list":
			runs, err := l.Engine.Waiting()
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(w, "no run waits on a person")
			}
			for _, r := range runs {
				what := r.Indeterminate
				if r.Status == agent.StatusAwaitingApproval {
					markers := make([]string, len(r.Pending))
					for i, p := range r.Pending {
						markers[i] = p.Marker
					}
					what = strings.Join(markers, ", ")
				}
				if r.Stopped != nil {
					what = fmt.Sprintf("stopped at %s; resume with %s", r.Stopped.Step, l.op().resume(r.RunID))
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.RunID, r.Status, what)
			}
			return nil
		case "show":
			runID, name, _ := showArgs(args)
			if name != "" {
				step, res, err := l.Engine.Step(runID, name)
				if errors.Is(err, operator.ErrInvalid) {
					// Not a step the loop runs yet: a call waiting for a
					// person is shown whole.
					info, ierr := l.Engine.Show(runID)
					if ierr != nil {
						return ierr
					}
					if p, ok := pendingCall(agent.Outcome{Status: info.Status, Pending: info.Pending}, name); ok {
						return printPending(ctx, w, l.op(), l.Exec, runID, p)
					}
				}
				if err != nil {
					return err
				}
				return printStep(ctx, w, l.Exec, runID, step, res)
			}
			info, err := l.Engine.Show(runID)
			if err != nil {
				return err
			}
			op := l.op()
			if h, ok := l.Engine.Store.(journal.Holders); ok {
				if d, err := h.Holder(ctx, runID); err == nil {
					op.asked, op.driver = true, d
					op.following = d != nil && d.Follows // for the line under the commands
				}
			}
			return printInfo(w, op, info)
		case "cancel":
			runID, _ := cancelArgs(args)
			if err := l.Engine.Cancel(ctx, runID); err != nil {
				return err
			}
			info, err := l.Engine.Show(runID)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "run %s: Cancelled: %s\n  a process driving it stops its running step within a second; nothing runs after it\n", runID, info.Reason)
			return nil
		}
	}
	runID, sig, err := ParseOperator(args)
	if err != nil {
		return err
	}
	if sig.Name == operator.SignalMessage && messageWait(args) {
		return l.messageWait(ctx, w, runID, sig)
	}
	if (sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny) && sig.Digest == "" {
		// Decide on the arguments pending now, and say which they were.
		if info, err := l.Engine.Show(runID); err == nil {
			if p, ok := pendingCall(agent.Outcome{Status: info.Status, Pending: info.Pending}, sig.Marker); ok {
				sig.Digest = p.Digest
			}
		}
	}
	// Asked before the record lands: a follower may finish the run at once.
	follows, _ := l.driverFollows(ctx, runID)
	if err := l.Engine.Signal(ctx, runID, sig); err != nil {
		return err
	}
	what := fmt.Sprintf("recorded %s for run %s", sig.Name, runID)
	if sig.Digest != "" {
		what += fmt.Sprintf(" (%s, arguments %s)", sig.Marker, sig.Digest)
	}
	if follows {
		fmt.Fprintf(w, "%s; the driver that follows the run goes on by itself\n", what)
		return nil
	}
	fmt.Fprintf(w, "%s; resume the run with:\n  %s\n", what, l.op().resume(runID))
	return nil
}

// op is how printed commands reach the local engine's runs.
func (l *Local) op() engine { return localEngine(l.Commands) }

func printInfo(w io.Writer, op engine, info local.RunInfo) error {
	v := runView{
		Header:  fmt.Sprintf("run %s: %s (%s)", info.RunID, info.Status, plural(info.Records, "record")),
		Outcome: agent.Outcome{Status: info.Status, Pending: info.Pending, Step: info.Indeterminate, Reason: info.Reason, Answer: info.Answer, CutOff: info.CutOff, Empty: info.Empty},
	}
	v.Stopped = stoppedLine(op, info)
	for _, s := range info.Steps {
		res, _ := json.Marshal(s.Result)
		line := fmt.Sprintf("%-28s %-5s %-10s starts=%d result=%s", s.Name, s.Kind, s.State, s.Starts, res)
		if s.Settled != nil {
			line += " (" + s.Settled.String() + ")"
		}
		v.Steps = append(v.Steps, line)
	}
	v.Tail = append(v.Tail, budgetLine(info.Turns, info.Usage, info.Budget))
	printRun(w, op, info.RunID, v)
	return nil
}

// stoppedLine says, for a local run that is Running, why its last driver
// stopped (run.stopped) and whether a driver runs it now, with the command
// that resumes it when none does; "" when there is nothing to say.
func stoppedLine(op engine, info local.RunInfo) string {
	if info.Status != agent.StatusRunning {
		return ""
	}
	resume := "resume with " + op.resume(info.RunID)
	switch {
	case !op.asked:
		if info.Stopped != nil {
			return fmt.Sprintf("%s; %s", info.Stopped, resume)
		}
		return ""
	case op.driver != nil:
		who := "a driver"
		if op.driver.PID > 0 {
			who = fmt.Sprintf("a driver (process %d)", op.driver.PID)
		}
		if info.Stopped != nil {
			return fmt.Sprintf("the last driver %s; %s runs it now", info.Stopped, who)
		}
		return who + " runs it now"
	case info.Stopped != nil:
		return fmt.Sprintf("%s; no driver runs it now: %s", info.Stopped, resume)
	default:
		return "no driver runs it now (its last driver ended without recording why: killed, or its host went down): " + resume
	}
}

// CheckOperatorArgs checks reconcile arguments before anything is opened
// or connected, so that a typo is a one-line usage error that touched
// nothing.
func CheckOperatorArgs(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			if len(args) != 1 {
				return usagef("list takes no arguments; got %d", len(args)-1)
			}
			return nil
		case "show":
			_, _, err := showArgs(args)
			return err
		case "cancel":
			_, err := cancelArgs(args)
			return err
		}
	}
	_, _, err := ParseOperator(args)
	return err
}

// cancelArgs checks the arguments of cancel and returns its run id.
func cancelArgs(args []string) (string, error) {
	if len(args) != 2 {
		return "", usagef("cancel takes RUN; got %d argument(s)", len(args)-1)
	}
	if err := operator.ValidRunID(args[1]); err != nil {
		return "", usagef("%v", err)
	}
	return args[1], nil
}

// parseMessage turns "message RUN TEXT... [--wait]" into a signal.
func parseMessage(args []string) (string, operator.Signal, error) {
	sig := operator.Signal{Name: operator.SignalMessage}
	var words []string
	for _, a := range args[1:] {
		if a != "--wait" && a != "-wait" {
			words = append(words, a)
		}
	}
	if len(words) < 2 {
		return "", sig, usagef("message takes RUN TEXT... [--wait]; got %d argument(s)", len(words))
	}
	runID := words[0]
	if err := operator.ValidRunID(runID); err != nil {
		return "", sig, usagef("%v", err)
	}
	sig.Content = strings.Join(words[1:], " ")
	if err := operator.CheckMessage(sig); err != nil {
		return "", sig, usagef("%v", err)
	}
	return runID, sig, nil
}

// messageWait reports whether a message command asks to wait for the answer.
func messageWait(args []string) bool {
	return len(args) > 0 && args[0] == operator.SignalMessage && (slices.Contains(args, "--wait") || slices.Contains(args, "-wait"))
}
