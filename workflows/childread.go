package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
)

// Reading runs of a tree. A signal carries no verifiable sender, so a
// child's report (SignalChild) and a parent's word that its budget was
// raised (SignalShare) are doorbells: they carry nothing the run believes.
// When rung, the run reads the other run's state itself, by its state
// query, in a local activity (which nobody outside the worker can
// complete) against the run id the server gave: a parent its child's
// (readChild), a child its parent's (readShare). What a read returns is
// checked and bounded again (clean, capShare) before it is shown.

// versionChildRead guards the parent's side: version 1 takes SignalChild
// as a doorbell and reads the child, rings SignalShare where it sent a
// budget, and charges a child that ended without an answer (cancelled,
// terminated, timed out) what it used. versionChildShare guards the
// child's side: version 1 refuses a budget sent to the child and takes its
// share from its parent's state when rung.
const (
	versionChildRead  = "child-read-by-query"
	versionChildShare = "child-share-by-query"
)

// SignalShare is the signal a parent run sends its running child when its
// budget was raised: the child reads its new share from the parent's
// state. It carries nothing.
const SignalShare = "agentrun-share"

// Bounds of a read: readTimeout bounds one query (a run whose workflow
// task waits on its own read answers late: both time out and try again),
// readRetries the tries after a failed one, each readBackoff (doubling)
// later or at the next ring.
const (
	readTimeout = 5 * time.Second
	readRetries = 3
	readBackoff = 2 * time.Second
)

// Bounds of a child's view: maxChildDepth levels of children, names and
// markers of at most maxName bytes, reasons of maxReason.
const (
	maxChildDepth = 8
	maxName       = 300
	maxReason     = 500
)

// bell is a doorbell: rung by a signal, answered by one read at a time.
type bell struct{ rung bool }

// serve runs read each time b is rung, one at a time: a ring during a
// read makes one more read after it. A read that fails is tried again
// after a pause (or at once when rung again), at most readRetries times;
// then the run keeps what it has until the next ring.
func (b *bell) serve(ctx workflow.Context, what string, read func(ctx workflow.Context) error) {
	for {
		if workflow.Await(ctx, func() bool { return b.rung }) != nil {
			return
		}
		for try := 0; ; try++ {
			b.rung = false
			err := read(ctx)
			if err == nil || ctx.Err() != nil {
				break
			}
			workflow.GetLogger(ctx).Warn("read "+what, "try", try+1, "error", err)
			if try == readRetries {
				break
			}
			if _, err := awaitFor(ctx, readBackoff<<try, "read "+what+" again", func() bool { return b.rung }); err != nil {
				return
			}
		}
	}
}

// readOptions are the options of a read's local activity: one attempt
// (serve tries again, on a timer).
func readOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: readTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// childRead is what readChild found: the child's view, or Same when its
// hash is the one the parent has.
type childRead struct {
	Same bool   `json:"same,omitempty"`
	Hash string `json:"hash"`
	View *Child `json:"view,omitempty"`
}

// readChild is the local activity that reads the child run id (its
// execution runID) by its state query and returns the view its parent
// shows (clean), or Same when the view's hash is last.
func readChild(ctx context.Context, id, runID, last string) (childRead, error) {
	v, err := activity.GetClient(ctx).QueryWorkflow(ctx, id, runID, QueryState)
	if err != nil {
		return childRead{}, fmt.Errorf("query %s: %w", id, err)
	}
	var st State
	if err := v.Get(&st); err != nil {
		return childRead{}, fmt.Errorf("decode the state of %s: %w", id, err)
	}
	turns, used := st.Used()
	view := clean(&Child{Run: id, Status: st.Status, Pending: st.Pending, Indeterminate: st.Indeterminate, Why: st.Why, Reason: st.Reason,
		Turns: turns, Usage: used, Budget: st.Budget, Child: st.Child}, maxChildDepth)
	b, _ := json.Marshal(view) // strings, numbers and lists always encode
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:8])
	if h == last {
		return childRead{Same: true, Hash: h}, nil
	}
	return childRead{Hash: h, View: view}, nil
}

// shareRead is what readShare found: what is left of the parent's budget
// for its running child, nil when nothing is to be taken.
type shareRead struct {
	Left *agent.Budget `json:"left,omitempty"`
}

// readShare is the local activity that reads the parent run id (its
// execution runID) by its state query and returns what is left of its
// budget for its running child me: its limits less what it used itself
// and its finished children (agent.Budget.Left).
func readShare(ctx context.Context, id, runID, me string) (shareRead, error) {
	v, err := activity.GetClient(ctx).QueryWorkflow(ctx, id, runID, QueryState)
	if err != nil {
		return shareRead{}, fmt.Errorf("query %s: %w", id, err)
	}
	var st State
	if err := v.Get(&st); err != nil {
		return shareRead{}, fmt.Errorf("decode the state of %s: %w", id, err)
	}
	if st.Status.Terminal() || (st.Child != nil && st.Child.Run != me) {
		return shareRead{}, nil // it ended, or runs another child
	}
	left, why := st.Budget.Left(st.Turns+st.Delegated, st.Usage)
	if why != "" {
		return shareRead{}, nil
	}
	return shareRead{Left: &left}, nil
}

// clean is c as a parent may show it: every status known, every name a
// well-formed step or run id of bounded length, reasons clipped, counts
// not negative, the pending calls' arguments inline and bounded (a note
// stands for arguments kept by reference or too long: the parent shows no
// reference for the codec server to expand) with the digest computed from
// them, and at most depth levels of children, each named as its parent
// names it (agent.ChildRunID). Nil for nil.
func clean(c *Child, depth int) *Child {
	if c == nil || depth < 1 {
		return nil
	}
	out := &Child{Run: c.Run, Agent: clip(c.Agent, maxName), Step: c.Step, Status: c.Status,
		Why: clip(c.Why, maxReason), Reason: clip(c.Reason, maxReason),
		Turns: max(c.Turns, 0), Usage: nonNegative(c.Usage), Budget: c.Budget.WithDefaults()}
	switch c.Status {
	case agent.StatusAwaitingApproval, agent.StatusIndeterminate, agent.StatusBudgetExceeded, agent.StatusRunning:
	default:
		out.Status = agent.StatusRunning // ended, or no status: its answer comes soon
	}
	if validName(c.Indeterminate) {
		out.Indeterminate = c.Indeterminate
	}
	for _, p := range c.Pending {
		if len(out.Pending) == agent.MaxCallsPerReply {
			break
		}
		if validName(p.Marker) && agent.IsToolStep(p.Marker) {
			out.Pending = append(out.Pending, shownPending(c.Run, p))
		}
	}
	if n := c.Child; n != nil && validName(n.Step) && n.Run == agent.ChildRunID(c.Run, n.Step) {
		out.Child = clean(n, depth-1)
	}
	return out
}

// validName reports whether s is a step name of at most maxName bytes.
func validName(s string) bool { return len(s) <= maxName && agent.ValidStep(s) }

// nonNegative is u with no negative count or cost.
func nonNegative(u agent.Usage) agent.Usage {
	u.InputTokens, u.OutputTokens = max(u.InputTokens, 0), max(u.OutputTokens, 0)
	u.CacheReadTokens, u.CacheWriteTokens = max(u.CacheReadTokens, 0), max(u.CacheWriteTokens, 0)
	if !(u.Cost >= 0) { // NaN too
		u.Cost = 0
	}
	return u
}

// shownPending is the pending call p of run as its parent shows it: its
// arguments inline when they are short JSON, else a note (a JSON string)
// naming their size and where to see them; the digest is the arguments'
// (for arguments kept by reference, the start of their content key: the
// SHA-256 of their bytes).
func shownPending(run string, p agent.Pending) agent.Pending {
	out := agent.Pending{Marker: p.Marker, Tool: clip(p.Tool, maxName), Expires: max(p.Expires, 0)}
	switch {
	case p.ArgsRef != nil:
		out.Digest = agent.ArgsDigest(nil, p.ArgsRef)
		out.Args = note(fmt.Sprintf("(%d bytes, kept by reference in run %s: reconcile show %s --step %s) %s",
			p.ArgsRef.Size, run, run, p.Marker, clip(p.ArgsRef.Preview, agent.PreviewLen)))
	case len(p.Args) > agent.InlineLimit || (len(p.Args) > 0 && !json.Valid(p.Args)):
		out.Digest = agent.ArgsDigest(p.Args, nil)
		out.Args = note(fmt.Sprintf("(%d bytes: reconcile show %s --step %s)", len(p.Args), run, p.Marker))
	default:
		out.Args = p.Args
		out.Digest = agent.ArgsDigest(p.Args, nil)
	}
	return out
}

// note is text as a JSON string.
func note(text string) json.RawMessage {
	b, _ := json.Marshal(text) // a string always encodes
	return b
}

// readChildren reads the child of d each time it rings, until the
// delegation ends (ctx is cancelled).
func (r *execution) readChildren(ctx workflow.Context, d *delegation, started workflow.Future) {
	var we workflow.Execution
	if started.Get(ctx, &we) != nil {
		return // it did not start: the delegation ends with why
	}
	d.runID = we.RunID
	d.bell.serve(ctx, "child run "+d.run, func(ctx workflow.Context) error {
		var cr childRead
		if err := workflow.ExecuteLocalActivity(readOptions(ctx), readChild, d.run, d.runID, d.hash).Get(ctx, &cr); err != nil {
			return err
		}
		if r.delegating == d && ctx.Err() == nil {
			d.hash = cr.Hash
			if cr.View == nil {
				r.childReports++ // unchanged: an update forwarded to it answers
				return nil
			}
			r.showChild(r.capShare(d, cr.View))
		}
		return nil
	})
}

// capShare is the view c of d's child with its run id the one the run
// started and its model calls no more than the budget the run gave it. Its
// tokens and cost are not capped: a model call may pass a limit that
// allowed it.
func (r *execution) capShare(d *delegation, c *Child) *Child {
	c.Run = d.run
	c.Turns = min(c.Turns, d.share.WithDefaults().MaxTurns)
	c.Budget.MaxTurns = min(c.Budget.MaxTurns, d.share.WithDefaults().MaxTurns)
	return c
}

// chargeEnded is what d's child used when it ended without an answer or a
// failure that says so (cancelled, terminated, timed out): its state read
// once more (a query of a closed run replays its history), else the view
// the run last had of it (last).
func (r *execution) chargeEnded(d *delegation, fut workflow.ChildWorkflowFuture, last *Child) Result {
	var we workflow.Execution
	if fut.GetChildWorkflowExecution().Get(r.ctx, &we) != nil {
		return Result{} // it never started
	}
	var cr childRead
	err := workflow.ExecuteLocalActivity(readOptions(r.ctx), readChild, d.run, we.RunID, "").Get(r.ctx, &cr)
	if err == nil && cr.View != nil {
		last = r.capShare(d, cr.View)
	} else if err != nil {
		workflow.GetLogger(r.ctx).Warn("read the ended child run; charging its last view", "child", d.run, "error", err)
	}
	if last == nil {
		return Result{}
	}
	return Result{Turns: last.Turns, Usage: last.Usage}
}

// maxBudget is the larger of each limit of a and b.
func maxBudget(a, b agent.Budget) agent.Budget {
	return agent.Budget{MaxTurns: max(a.MaxTurns, b.MaxTurns), MaxTokens: max(a.MaxTokens, b.MaxTokens), MaxCost: max(a.MaxCost, b.MaxCost)}
}
