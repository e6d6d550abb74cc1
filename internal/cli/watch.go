package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// watch is what --wait says about a run it follows besides its outcomes:
// a lost connection to Temporal and its return, a run no worker answers
// for yet, the attempts of a step being retried and a step's wait for its
// rate limit, each said once, in plain words. The raw errors go to the output only with --verbose.
type watch struct {
	r     *Remote
	w     io.Writer
	runID string
	// said is the last thing said about the connection or the workers
	// ("" when all is well); retry the last retry line; limitWait the
	// last rate-limit wait said (its step, attempt and slot).
	said      string
	retry     string
	limitWait string
}

func (r *Remote) watch(w io.Writer, runID string) *watch {
	return &watch{r: r, w: w, runID: runID}
}

// lookTimeout bounds one look at the run, so that a cut connection is
// said within seconds rather than after the sdk's own retries.
const lookTimeout = 5 * time.Second

// look describes the run and, while it runs, queries its state. seen is
// false when the run could not be seen this time for a reason that passes
// (the connection to Temporal, no worker answering yet), which look has
// said; err is an error that ends the wait.
func (wt *watch) look(ctx context.Context) (desc description, st workflows.State, seen bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	desc, err = wt.r.describe(dctx, wt.runID)
	if err != nil {
		if ctx.Err() == nil && transient(err) {
			wt.say(fmt.Sprintf("lost the connection to Temporal at %s; reconnecting", wt.r.Conn.HostPort), err)
			return desc, st, false, nil
		}
		return desc, st, false, err
	}
	if !running(desc) {
		wt.say("", nil)
		return desc, st, true, nil
	}
	st, err = wt.r.state(ctx, wt.runID)
	if err != nil {
		if ctx.Err() != nil {
			return desc, st, false, ctx.Err()
		}
		wt.noAnswer(ctx, err)
		return desc, st, false, nil
	}
	wt.say("", nil)
	if rt := st.Retry; rt != nil {
		if line := rt.String(); line != wt.retry {
			fmt.Fprintf(wt.w, "run %s: retrying %s\n", wt.runID, line)
			wt.retry = line
		}
	}
	if lw := st.LimitWait; lw != nil {
		// Once per wait: its line counts down, and the watch says it once.
		if key := fmt.Sprintf("%s/%d/%s", lw.Step, lw.Attempt, lw.Until); key != wt.limitWait {
			fmt.Fprintf(wt.w, "run %s: %s\n", wt.runID, lw.At(time.Now()))
			wt.limitWait = key
		}
	}
	return desc, st, true, nil
}

// noAnswer says why the run's state query failed: the connection, no
// worker polling the run's task queue, or a worker that polls and has not
// answered yet (busy, or restarting).
func (wt *watch) noAnswer(ctx context.Context, qerr error) {
	n, err := wt.r.pollers(ctx)
	queue := wt.r.Settings.TaskQueue
	switch {
	case err != nil && transient(err):
		wt.say(fmt.Sprintf("lost the connection to Temporal at %s; reconnecting", wt.r.Conn.HostPort), err)
	case err == nil && n == 0:
		wt.say(fmt.Sprintf("no worker polls task queue %s yet; waiting for one to start", queue), qerr)
	default:
		wt.say(fmt.Sprintf("a worker polls task queue %s but has not answered yet; waiting", queue), qerr)
	}
}

// say prints what is wrong now, once, and that it passed when it did
// (what "" says: all is well).
func (wt *watch) say(what string, raw error) {
	if what == wt.said {
		return
	}
	switch {
	case what != "":
		fmt.Fprintf(wt.w, "run %s: %s\n", wt.runID, what)
		if wt.r.Verbose && raw != nil {
			fmt.Fprintf(wt.w, "  (%v)\n", raw)
		}
	case wt.said != "":
		fmt.Fprintf(wt.w, "run %s: Temporal at %s answers again\n", wt.runID, wt.r.Conn.HostPort)
	}
	wt.said = what
}

// running reports whether the run goes on: running, or continued in a
// new execution.
func running(d description) bool {
	return d.status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || d.status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
}

// transient reports whether err is a failure of the connection to
// Temporal that passes: the frontend unavailable, a call that timed out or
// was cut off (an HTTP/2 stream reset reaches the client as Canceled).
func transient(err error) bool {
	var (
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		canceled    *serviceerror.Canceled
	)
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// follow prints each status change of a run until it ends, and returns
// the error that carries the exit code of its outcome.
func (r *Remote) follow(ctx context.Context, out io.Writer, runID string) error {
	w := r.followText(ctx, out, runID) // the model's text as it comes
	defer w.Close()
	return r.await(ctx, w, runID, awaitRule{
		// A session answered: it waits for a message, not for us.
		done: func(st workflows.State) bool { return st.Status == agent.StatusIdle },
		shown: func(st workflows.State) bool {
			return st.Status != agent.StatusCompleted && st.Status != agent.StatusFailed
		},
		raise: true,
	})
}

// answer waits for the run's answer to a message given to model step
// step (an answer from that model call or a later one) and prints it; a
// run that stops on something else first is printed as --wait prints it.
func (r *Remote) answer(ctx context.Context, w *liveText, runID, step string) error {
	n, _ := agent.StepTurn(step)
	return r.await(ctx, w, runID, awaitRule{
		done: func(st workflows.State) bool { return st.Status == agent.StatusIdle && st.AnswerTurn >= n },
		shown: func(st workflows.State) bool {
			return st.Status == agent.StatusAwaitingApproval || st.Status == agent.StatusIndeterminate || st.Status == agent.StatusBudgetExceeded
		},
	})
}

// awaitRule is what a wait on a running run looks for: the state that
// ends it, the states printed on the way (each change once), and whether
// a budget exceeded is printed with its Temporal CLI raise.
type awaitRule struct {
	done, shown func(workflows.State) bool
	raise       bool
}

// await looks at a run every Poll until it ends or reaches rule.done,
// printing where it stands; an end returns the error that carries the
// exit code of its outcome.
func (r *Remote) await(ctx context.Context, w *liveText, runID string, rule awaitRule) error {
	poll := r.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	wt := r.watch(w, runID)
	last := ""
	for {
		desc, st, seen, err := wt.look(ctx)
		switch {
		case err != nil:
			return err
		case !seen:
		case !running(desc):
			w.wait(ctx, r, runID)
			return r.closed(ctx, w, runID)
		case rule.done(st):
			w.wait(ctx, r, runID)
			printOutcome(w, r.op(), runID, outcomeOf(st))
			return nil
		case rule.shown(st):
			if key := stateKey(st); key != last {
				w.wait(ctx, r, runID)
				printOutcome(w, r.op(), runID, outcomeOf(st))
				if rule.raise && st.Status == agent.StatusBudgetExceeded {
					fmt.Fprintf(w, "         or: %s\n", r.op().signal(runID, operator.SignalBudget, operator.RaiseHint(st.Budget, st.Turns, st.Usage)))
				}
				last = key
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

func stateKey(st workflows.State) string {
	b, _ := json.Marshal([]any{st.Status, st.Pending, st.Indeterminate, len(st.Rejected)})
	return string(b)
}
