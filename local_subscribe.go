package agentrun

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/workflows"
)

// Subscribe follows the run as [Run.Subscribe] does, read from its journal
// as records land (a journal.Watch): each step started and completed, with
// the workflow's preview of its result, and each status the run takes
// (AwaitingApproval with its markers, Indeterminate, Completed with a
// preview of the answer, ...), in order, until the run has ended and all
// of it is yielded, or ctx ends (then ctx's error is the last item). An
// unknown run is one error, ErrRunNotFound.
//
// An item's Offset is the index of the journal record it comes from; the
// items of one record share it, and From = Offset+1 goes on after all of
// them. The journal keeps every record, so From 0 reads a run that ended
// too. The local engine differs from the workflow's stream where its
// journal does: a model or read step, recorded only once done, has its
// step.started just before its step.completed; a status is the one
// [LocalRun.State] would have read right after the record (its child run
// and the time as they are now); a write's status while it runs is the
// one before it (Indeterminate once no process drives the run or the
// write's attempt can no longer be running, looked at every
// journal.WatchPoll). The local engine does not stream model text: Tokens
// yields nothing more. It follows the run alone, as RunOnly does: a
// sub-agent's child run has a journal of its own, whose items come from
// subscribing to its id (agent.ChildRunID).
func (r *LocalRun) Subscribe(ctx context.Context, opts SubscribeOptions) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		if err := r.subscribe(ctx, opts.From, yield); err != nil {
			yield(Update{Run: r.id}, err)
		}
	}
}

// feed turns a run's records into its items.
type feed struct {
	e      *local.Engine
	id     string
	status string // the key of the last status yielded (statusKey)
	ended  bool   // the last status yielded is terminal
}

// subscribe yields the items of the run's records from index from on,
// and returns nil once the run ended, false from yield, or the error that
// ends the subscription.
func (r *LocalRun) subscribe(ctx context.Context, from int64, yield func(Update, error) bool) error {
	if from < 0 {
		return fmt.Errorf("subscribe to run %s: From %d is negative; want 0, or an item's Offset plus one", r.id, from)
	}
	e, _, _, err := r.l.of(r.id)
	if err != nil {
		return err
	}
	w := e.Watch(ctx, r.id) // before the loads: an append after one wakes the next
	defer w.Close()
	f := &feed{e: e, id: r.id}
	next := int(min(from, int64(1)<<30)) // an int on every platform, past any journal
	recs, err := r.l.store.Load(r.id)
	if err != nil {
		return fmt.Errorf("subscribe to run %s: %w", r.id, err)
	}
	if n := min(next, len(recs)); n > 0 {
		// What the subscriber saw already: the status after record n-1.
		if info, ok := f.statusAt(ctx, recs[:n], n < len(recs)); ok {
			f.statusItems(info, n-1)
		}
	}
	recheck := time.NewTicker(journal.WatchPoll)
	defer recheck.Stop()
	for {
		for ; next < len(recs); next++ {
			for _, u := range f.items(ctx, recs, next) {
				if !yield(u, nil) {
					return nil
				}
			}
		}
		if f.ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.C():
		case <-recheck.C:
			// A write at the tail whose driver went away: its status now.
			if len(recs) > 0 && recs[len(recs)-1].Type == journal.StepStarted {
				if info, ok := f.statusAt(ctx, recs, false); ok {
					for _, u := range f.statusItems(info, len(recs)-1) {
						if !yield(u, nil) {
							return nil
						}
					}
				}
			}
		}
		if recs, err = r.l.store.Load(r.id); err != nil {
			return fmt.Errorf("subscribe to run %s: %w", r.id, err)
		}
	}
}

// items are the items of record i of recs: its step's events, then the
// run's status after it when that changed.
func (f *feed) items(ctx context.Context, recs []journal.Record, i int) []Update {
	rec := recs[i]
	info, ok := f.statusAt(ctx, recs[:i+1], i+1 < len(recs))
	var out []Update
	ev := func(e progress.Event) { out = append(out, Update{Run: f.id, Offset: int64(i), Event: &e}) }
	switch rec.Type {
	case journal.StepStarted:
		ev(progress.Event{Type: progress.EventStepStarted, Step: rec.Step, Kind: rec.Kind})
	case journal.StepCompleted:
		if !startedBefore(recs[:i], rec.Step) {
			ev(progress.Event{Type: progress.EventStepStarted, Step: rec.Step, Kind: rec.Kind})
		}
		done := progress.Event{Type: progress.EventStepCompleted, Step: rec.Step, Kind: rec.Kind, Preview: agent.Summarize(rec.Result)}
		if rec.Kind == agent.KindWrite {
			done.Settled = agent.SettledOf(rec.Result)
		}
		if ok && rec.Kind == agent.KindModel {
			done.Cost = info.Usage.Cost // the run's so far, as the workflow's
		}
		ev(done)
	}
	if ok {
		out = append(out, f.statusItems(info, i)...)
	}
	return out
}

// startedBefore reports whether recs hold a step.started of step since
// its last step.completed: a write's, which has its own record.
func startedBefore(recs []journal.Record, step string) bool {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Step == step {
			return recs[i].Type == journal.StepStarted
		}
	}
	return false
}

// statusAt returns where the run stood after recs, false while a write
// started by the last of them may be running: more records follow it
// (more), or a process drives the run and the write's attempt may still
// run.
func (f *feed) statusAt(ctx context.Context, recs []journal.Record, more bool) (local.RunInfo, bool) {
	last := recs[len(recs)-1]
	if last.Type == journal.StepStarted {
		if more || last.Attempt.Holds(time.Now()) {
			return local.RunInfo{}, false
		}
		if h, ok := f.e.Store.(journal.Holders); ok {
			if busy, err := h.Holder(ctx, f.id); err != nil || busy != nil && last.Attempt == nil {
				return local.RunInfo{}, false
			}
		}
	}
	info, err := f.e.ShowRecords(f.id, recs)
	return info, err == nil
}

// statusItems is the status event of info, at offset i, when it differs
// from the last one yielded (workflows.StatusEvent): none otherwise.
func (f *feed) statusItems(info local.RunInfo, i int) []Update {
	e, key := workflows.StatusEvent(stateOf(info))
	if key == f.status {
		return nil
	}
	f.status, f.ended = key, info.Status.Terminal()
	return []Update{{Run: f.id, Offset: int64(i), Event: &e}}
}
