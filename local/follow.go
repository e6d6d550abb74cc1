package local

import (
	"context"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// follows reports whether a following driver waits in status s rather
// than return: the statuses that wait for a person or, a session, for a
// message.
func follows(s agent.Status) bool {
	return s == agent.StatusIdle || operator.WaitsOnPerson(s)
}

// stopped is what Drive returns when its context ended (err) between two
// looks at the run: a following driver whose run waits for a person or a
// message returns that wait in a *FollowStoppedError, as when its context
// ends during the wait itself (a wake-up can come just before the end);
// otherwise the outcome is empty and the error err.
func (j *Engine) stopped(runID string, f *follower, err error) (agent.Outcome, error) {
	if f == nil {
		return agent.Outcome{}, err
	}
	_, st, lerr := j.load(runID)
	if lerr != nil {
		return agent.Outcome{}, err
	}
	if st.completed || st.cancelled {
		return agent.Outcome{}, err
	}
	d := j.decide(st)
	if o, _ := j.waitsOnChild(runID, d); o != nil {
		d.Outcome = o // its child waits for a person
	}
	if d.Outcome != nil && follows(d.Outcome.Status) {
		return *d.Outcome, &FollowStoppedError{RunID: runID, Outcome: *d.Outcome, Err: err}
	}
	return agent.Outcome{}, err
}

// follower is the wait of a driver that follows its run.
type follower struct {
	j         *Engine
	runID     string
	watch     journal.Watch
	announced string // the wait OnWait was told of last
}

// changes is the follower's wake-ups, nil when Drive does not follow.
func (f *follower) changes() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.watch.C()
}

// wait tells OnWait of o when it is a new wait, then sleeps until the
// journal may have changed or until at (when not zero: an approval
// timeout, a session's idle time). ctx ending is a *FollowStoppedError.
func (f *follower) wait(ctx context.Context, o agent.Outcome, at time.Time) error {
	return f.waitOn(ctx, o, at, nil)
}

// waitChild is wait for a run whose child run waits for a person (c): it
// also wakes when the child's journal changes (an approval forwarded to
// it, or sent to the child itself) or when the child goes on by itself.
func (f *follower) waitChild(ctx context.Context, c *childWaitError) error {
	w := f.j.Watch(ctx, c.RunID)
	defer w.Close()
	if recs, err := f.j.Store.Load(c.RunID); err != nil || len(recs) != c.Seen {
		return nil // it changed before the watch began: look again
	}
	return f.waitOn(ctx, c.Outcome, c.At, w.C())
}

// waitOn is wait, woken by more as well.
func (f *follower) waitOn(ctx context.Context, o agent.Outcome, at time.Time, more <-chan struct{}) error {
	if key := waitKey(o); key != f.announced {
		f.announced = key
		if f.j.OnWait != nil {
			f.j.OnWait(o)
		}
	}
	var timer <-chan time.Time
	if !at.IsZero() {
		t := time.NewTimer(at.Sub(f.j.now())) // on the journal's clock, as the fold decides
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.watch.C():
	case <-more:
	case <-timer:
	case <-ctx.Done():
		return &FollowStoppedError{RunID: f.runID, Outcome: o, Err: ctx.Err()}
	}
	return nil
}

// waitKey names a wait: its status and what it waits on.
func waitKey(o agent.Outcome) string {
	k := []string{string(o.Status), o.Step, o.Reason, o.Answer}
	for _, p := range o.Pending {
		k = append(k, p.Marker)
	}
	return strings.Join(k, "\x00")
}

// wakeAt is when a run waiting in o goes on without a person: the first
// approval timeout of its pending calls, or a session's idle time; zero
// when nothing but a record wakes it.
func (s *state) wakeAt(o agent.Outcome) time.Time {
	switch o.Status {
	case agent.StatusIdle:
		return s.idleUntil()
	case agent.StatusAwaitingApproval:
		return s.expiry(&o).Next()
	}
	return time.Time{}
}

// Watch returns a Watch of runID's journal: the store's own when it is a
// Watcher (a poll every WatchPoll when it cannot watch now), else a poll.
// Close it when done.
func (j *Engine) Watch(ctx context.Context, runID string) journal.Watch {
	if w, ok := j.Store.(journal.Watcher); ok {
		if wt, err := w.WatchRun(ctx, runID); err == nil {
			return wt
		}
	}
	return journal.PollWatch(ctx, journal.WatchPoll)
}
