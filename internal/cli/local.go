package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/fromenv"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
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

	hooks testhook.Hooks // the test-only hooks, which StartLocal puts in Drive's context
	// model builds a model spec (fromenv.Model): a fork's --model.
	model func(ctx context.Context, spec string) (llm.Provider, error)
}

// OpenLocal builds the local engine from the settings. Close it when done.
func OpenLocal(ctx context.Context, s Settings) (*Local, error) {
	store, err := s.JournalStore(ctx)
	if err != nil {
		return nil, err
	}
	exec, err := s.Executor(ctx, nil)
	if err != nil {
		return nil, err
	}
	loop := agent.Loop{Tools: exec.Tools.Specs(), FailOnCut: exec.FailOnCut, FailOnEmpty: exec.FailOnEmpty}
	return &Local{
		// Agents: a call of an agent tool runs as a child run (local.AgentsOf).
		Engine:   &local.Engine{Store: store, Loop: loop, Probe: exec.Probe, Agents: local.AgentsOf(exec, loop)},
		Exec:     exec,
		Commands: s.Commands,
		Retry:    s.LocalRetry(),
		hooks:    s.Test,
		model: func(ctx context.Context, spec string) (llm.Provider, error) {
			return fromenv.Model(ctx, s.Config, spec)
		},
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
	if strings.TrimSpace(prompt) == "" {
		// A child run of an agent tool is driven by its parent: resume
		// the top run of its tree, which drives it.
		if root := l.Engine.Root(runID); root != runID {
			fmt.Fprintf(w, "run %s is a child run of run %s; resuming %s, which drives it\n", runID, root, root)
			runID = root
		}
	}
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
	base, err := l.resumeExec(ctx, runID) // a fork's own model
	if err != nil {
		return err
	}
	var exec agent.Executor = base
	if limits.Stream != nil && *limits.Stream {
		exec = localText{Executor: base, w: w}
		if agents := l.Engine.Agents; agents != nil {
			// A child run's text too, labelled with its agent.
			l.Engine.Agents = func(name string) (local.Agent, error) {
				a, err := agents(name)
				if e, ok := a.Exec.(*execute.Executor); ok && err == nil {
					a.Exec = localText{Executor: e, w: w, agent: name}
				}
				return a, err
			}
		}
	}
	l.Engine.Retry = l.Retry
	l.Engine.OnRetry = func(r local.Retrying) { fmt.Fprintln(w, r.String()) }
	l.Engine.OnLimitWait = func(lw local.LimitWait) { fmt.Fprintln(w, lw.String()) }
	o, err := l.Engine.Drive(testhook.With(ctx, l.hooks), runID, input, exec)
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

var _ runs = (*Local)(nil)

// ReconcileLocal runs one operator command against the local journal.
func (l *Local) ReconcileLocal(ctx context.Context, w io.Writer, args []string) error {
	return operate(ctx, w, l, args)
}

func (l *Local) list(_ context.Context, w io.Writer) error {
	waiting, err := l.Engine.Waiting()
	unread, err := unreadRuns(err)
	if err != nil {
		return err
	}
	if len(waiting) == 0 && len(unread) == 0 {
		fmt.Fprintln(w, "no run waits on a person")
	}
	for _, r := range waiting {
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
		if r.Parent != "" {
			what += fmt.Sprintf(" (child run of agent %s of run %s)", r.Agent, r.Parent)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.RunID, r.Status, what)
	}
	if len(unread) == 0 {
		return nil
	}
	// The runs it could not read come last, one line each; the command then
	// fails with the first one's error (a missing key exits 2), so that no
	// script takes the list for whole.
	for _, u := range unread {
		fmt.Fprintf(w, "%s\tunreadable\t%v\n", u.RunID, u.Err)
	}
	return fmt.Errorf("%d run(s) could not be read (listed as unreadable): %w", len(unread), unread[0].Err)
}

// unreadRuns splits Waiting's error into the runs it could not read; any
// other error is returned as it is.
func unreadRuns(err error) ([]*local.UnreadError, error) {
	if err == nil {
		return nil, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]*local.UnreadError, 0, len(errs))
	for _, e := range errs {
		u, ok := e.(*local.UnreadError)
		if !ok {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func (l *Local) show(ctx context.Context, w io.Writer, runID string) error {
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
}

func (l *Local) step(_ context.Context, runID, name string) (agent.Step, json.RawMessage, error) {
	step, res, err := l.Engine.Step(runID, name)
	if errors.Is(err, operator.ErrInvalid) {
		err = noStep{err} // not a step the loop runs yet
	}
	return step, res, err
}

func (l *Local) content() (*execute.Executor, error) { return l.Exec, nil }

func (l *Local) standing(_ context.Context, runID string) (agent.Outcome, error) {
	info, err := l.Engine.Show(runID)
	return infoOutcome(info), err
}

// send leaves the checks to the journal: it refuses an unknown or ended
// run in the append that would record the input (operator.Ended).
func (l *Local) send(ctx context.Context, w io.Writer, _, runID string, sig operator.Signal, wait bool) error {
	if (sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny) && sig.Digest == "" {
		// Decide on the arguments pending now (the run checks them
		// anyway), and say which they were.
		if o, err := l.standing(ctx, runID); err == nil {
			if p, ok := pendingCall(o, sig.Marker); ok {
				sig.Digest = p.Digest
			}
		}
	}
	if sig.Name == operator.SignalMessage && wait {
		return l.messageWait(ctx, w, runID, sig)
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

func (l *Local) cancel(ctx context.Context, w io.Writer, runID string) error {
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

// infoOutcome is where a local run stands, as the outcome printed of it.
func infoOutcome(info local.RunInfo) agent.Outcome {
	return agent.Outcome{Status: info.Status, Pending: info.Pending, Step: info.Indeterminate, Reason: info.Reason, Answer: info.Answer, CutOff: info.CutOff, Empty: info.Empty}
}

// op is how printed commands reach the local engine's runs.
func (l *Local) op() engine { return localEngine(l.Commands) }

// onWait is how a following local driver says it waits: where the run
// stands with the commands that unblock it, and that it goes on by itself.
func (l *Local) onWait(w io.Writer, runID string) func(agent.Outcome) {
	op := l.op()
	op.following = true
	return func(o agent.Outcome) { printOutcome(w, op, runID, o) }
}

// stoppedFollowing reports a following driver that Ctrl-C or SIGTERM
// stopped while its run waited, and returns the error carrying the
// status's exit code (nil for an Idle session).
func (l *Local) stoppedFollowing(w io.Writer, runID string, stopped *local.FollowStoppedError) error {
	fmt.Fprintf(w, "run %s: stopped following (%v); it is %s as it was: follow it again with %s --follow\n", runID, stopped.Err, stopped.Outcome.Status, l.op().resume(runID))
	return outcomeErr(stopped.Outcome)
}

// driverFollows reports whether a process drives runID and follows it
// (starter --local --follow), asking the store (journal.Holders) without
// taking the run's lock or writing anything.
func (l *Local) driverFollows(ctx context.Context, runID string) (bool, error) {
	h, ok := l.Engine.Store.(journal.Holders)
	if !ok {
		return false, nil
	}
	busy, err := h.Holder(ctx, runID)
	if err != nil {
		return false, err
	}
	return busy != nil && busy.Follows, nil
}

// answerCheck is how often message --wait makes sure the driver it waits
// for still follows the run (a driver that dies writes nothing). The
// answer itself wakes it through the journal's Watch.
const answerCheck = journal.WakeBound

// messageWait sends the message sig to a local run that a driver follows
// and prints the answer to it: where the run stands once a model step
// after the message answered (Idle, or ended). A wait on a person before
// that is printed with what unblocks it, and the wait goes on.
// With no driver following the run it writes nothing and says in one line
// what to start.
func (l *Local) messageWait(ctx context.Context, w io.Writer, runID string, sig operator.Signal) error {
	before, err := l.Engine.Show(runID)
	if err != nil {
		return err
	}
	if before.Status.Terminal() {
		return l.Engine.Signal(ctx, runID, sig) // refused: the run ended
	}
	follows, err := l.driverFollows(ctx, runID)
	if err != nil {
		return err
	}
	if !follows {
		return usagef("no driver follows run %s, so nothing would answer now: start one with %s --follow, then send the message; or send it without --wait, and the run takes it when resumed", runID, l.op().resume(runID))
	}
	watch := l.Engine.Watch(ctx, runID)
	defer watch.Close()
	if err := l.Engine.Signal(ctx, runID, sig); err != nil {
		return err
	}
	fmt.Fprintf(w, "recorded message for run %s; waiting for the answer of the driver that follows it\n", runID)
	check := time.NewTicker(answerCheck)
	defer check.Stop()
	op := l.op()
	op.following = true
	shown := "" // the wait on a person printed last
	for gone := false; ; {
		info, err := l.Engine.Show(runID)
		if err != nil {
			return err
		}
		o := infoOutcome(info)
		answered := info.Turns > before.Turns // a model step after the message
		switch {
		case info.Status.Terminal() || info.Status == agent.StatusIdle && answered:
			printOutcome(w, op, runID, o)
			return outcomeErr(o)
		case answered && operator.WaitsOnPerson(info.Status):
			// It stops on a person first: say so, with what unblocks it,
			// and wait on, as on Temporal.
			if key := fmt.Sprint(o.Status, o.Step, o.Reason, o.Pending); key != shown {
				printOutcome(w, op, runID, o)
				shown = key
			}
		}
		if gone {
			return fmt.Errorf("the driver that followed run %s stopped before it answered; the message is recorded: resume the run with %s --follow", runID, l.op().resume(runID))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for the answer (%v); the message is recorded: see the run with %s", ctx.Err(), l.op().reconcile("show", runID))
		case <-watch.C():
		case <-check.C:
			if follows, err := l.driverFollows(ctx, runID); err == nil && !follows {
				gone = true // one more look: it may have answered as it stopped
			}
		}
	}
}
