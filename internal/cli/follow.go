package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// FollowFlags decides whether a starter follows its run from its flags:
// --follow (set tells whether it was given), --wait and --session. With
// --local, --wait and --session imply --follow, and --follow=false with
// either is a usage error naming what to drop; on Temporal a run goes on
// by itself, so --follow is refused there. It sets limits.Follow.
func FollowFlags(limits *Limits, local, wait, session, follow, set bool) error {
	if !local {
		if set && follow {
			return usagef("--follow is for --local runs: a run on Temporal goes on by itself when a person decides; --wait follows it")
		}
		return nil
	}
	switch {
	case set && !follow && session:
		return usagef("--session with --local needs a driver that follows the run: drop --follow=false (the driver answers each message)")
	case set && !follow && wait:
		return usagef("--wait with --local follows the run: drop --follow=false, or drop --wait to stop at the first wait")
	}
	limits.Follow = follow || wait || session
	return nil
}

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
func (l *Local) stoppedFollowing(w io.Writer, runID string, stopped *journal.FollowStoppedError) error {
	fmt.Fprintf(w, "run %s: stopped following (%v); it is %s as it was: follow it again with %s --follow\n", runID, stopped.Err, stopped.Outcome.Status, l.op().resume(runID))
	return outcomeErr(stopped.Outcome)
}

// driverFollows reports whether a process drives runID and follows it
// (starter --local --follow), asking the store (journal.Holders) without
// taking the run's lock or writing anything.
func (l *Local) driverFollows(ctx context.Context, runID string) (bool, error) {
	h, ok := l.Journal.Store.(journal.Holders)
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
	before, err := l.Journal.Show(runID)
	if err != nil {
		return err
	}
	if before.Status.Terminal() {
		return l.Journal.Signal(ctx, runID, sig) // refused: the run ended
	}
	follows, err := l.driverFollows(ctx, runID)
	if err != nil {
		return err
	}
	if !follows {
		return usagef("no driver follows run %s, so nothing would answer now: start one with %s --follow, then send the message; or send it without --wait, and the run takes it when resumed", runID, l.op().resume(runID))
	}
	watch := l.Journal.Watch(ctx, runID)
	defer watch.Close()
	if err := l.Journal.Signal(ctx, runID, sig); err != nil {
		return err
	}
	fmt.Fprintf(w, "recorded message for run %s; waiting for the answer of the driver that follows it\n", runID)
	check := time.NewTicker(answerCheck)
	defer check.Stop()
	op := l.op()
	op.following = true
	shown := "" // the wait on a person printed last
	for gone := false; ; {
		info, err := l.Journal.Show(runID)
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
