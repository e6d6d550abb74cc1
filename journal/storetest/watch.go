package storetest

import (
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// RunWatch checks a journal.Watcher: two stores over the same journals (as
// two processes would open them), one watching a run, the other writing.
// An append to the watched run wakes the watch within journal.WakeBound (the
// time is logged); appends to another run, and an append refused with
// ErrConflict, do not wake it within the poll interval; a closed watch
// stays closed.
func RunWatch(t *testing.T, newTwo func(t *testing.T) (watcher, writer journal.Store)) {
	t.Helper()
	t.Run("Wakes", func(t *testing.T) {
		t.Parallel()
		ws, w := newTwo(t)
		started := journal.Record{Type: journal.RunStarted, Input: agent.UserMessages("hi")}
		for _, run := range []string{"watched", "other"} {
			if err := w.Append(run, 0, started); err != nil {
				t.Fatal(err)
			}
		}
		watch, err := ws.(journal.Watcher).WatchRun(t.Context(), "watched")
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Close()
		drain(watch)
		for i := 1; i <= 3; i++ {
			at := time.Now()
			sig := operator.Signal{Name: operator.SignalMessage, Content: "more"}
			if err := w.Append("watched", i, journal.Record{Type: journal.SignalRecord, Signal: &sig}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-watch.C():
				t.Logf("append %d woke the watch after %v", i, time.Since(at))
			case <-time.After(journal.WakeBound):
				t.Fatalf("append %d did not wake the watch within %v", i, journal.WakeBound)
			}
			time.Sleep(50 * time.Millisecond) // one append's events may come in several pieces
			drain(watch)
		}
		if err := w.Append("other", 1, journal.Record{Type: journal.RunCancelled}); err != nil {
			t.Fatal(err)
		}
		if err := w.Append("watched", 1, journal.Record{Type: journal.RunCancelled}); err == nil {
			t.Fatal("an append with a stale seen count succeeded")
		}
		select {
		case <-watch.C():
			t.Fatal("an append to another run, or one refused, woke the watch")
		case <-time.After(journal.WatchPoll + 200*time.Millisecond):
		}
		if err := watch.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		_ = watch.Close() // twice is fine
	})
}

// drain takes the values waiting in the watch's channel.
func drain(w journal.Watch) {
	for {
		select {
		case <-w.C():
		default:
			return
		}
	}
}
