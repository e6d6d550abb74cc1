package journal

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentrun/agentrun/operator"
)

// Watcher is a Store that tells a waiting reader when a run's journal may
// have grown, so that a driver that follows its run (local.Engine.Follow) sleeps
// until an operator's record lands instead of polling for it. A Store that
// is not a Watcher is looked at every WatchPoll.
type Watcher interface {
	// WatchRun returns a Watch of runID's journal. It ends with Close or
	// with ctx.
	WatchRun(ctx context.Context, runID string) (Watch, error)
}

// Watch tells of changes to one run's journal.
type Watch interface {
	// C receives a value after the run's journal may have changed. Wake-ups
	// are coalesced (one value stands for any number of appends) and may
	// be spurious (an append of another run, a lost connection): the
	// reader loads the journal and decides from what is there. A reader
	// loads after it takes a value, so that no append is missed between
	// the two.
	C() <-chan struct{}
	// Close stops watching. It is safe to call more than once.
	Close() error
}

// The bounds on how late a wake-up is after an append returned nil.
const (
	// WatchPoll is how often a Watch looks at a journal where the store
	// cannot notify: a FileStore whose file-system notifications are not
	// available (no inotify instance left, a file system without them),
	// and a Store that is not a Watcher. A wake-up there is at most this
	// late.
	WatchPoll = time.Second
	// WakeBound bounds how late a following driver wakes after an
	// operator's append returned, on every store: a FileStore's
	// notification (fsnotify: inotify on Linux, kqueue on BSD and macOS)
	// and a PostgreSQL NOTIFY arrive within milliseconds of the write or
	// the commit, a poll within WatchPoll; the rest is the driver's own
	// load of the journal. The end-to-end tests assert it.
	WakeBound = 2 * WatchPoll
)

// watch is a Watch whose C is fed by the store.
type watch struct {
	c      chan struct{}
	stop   context.CancelFunc
	done   chan struct{} // closed when the feeding goroutine returned
	closer func() error  // run once by Close, after the goroutine ended
	once   sync.Once
	err    error
}

func newWatch(ctx context.Context) (*watch, context.Context) {
	ctx, stop := context.WithCancel(ctx)
	return &watch{c: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}, ctx
}

// Wake puts a value in C unless one waits there already.
func (w *watch) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

func (w *watch) C() <-chan struct{} { return w.c }

func (w *watch) Close() error {
	w.once.Do(func() {
		w.stop()
		<-w.done
		if w.closer != nil {
			w.err = w.closer()
		}
	})
	return w.err
}

// NewWatch returns a Watch whose feed runs feed(ctx, wake) in a goroutine
// until Close or ctx ends it; closer, when not nil, runs once after feed
// returned. Stores outside this package (PostgreSQL) build theirs with it.
func NewWatch(ctx context.Context, feed func(ctx context.Context, wake func()), closer func() error) Watch {
	w, ctx := newWatch(ctx)
	w.closer = closer
	go func() {
		defer close(w.done)
		feed(ctx, w.wake)
	}()
	return w
}

// PollWatch returns a Watch that wakes every interval: the watch of a store
// that cannot notify.
func PollWatch(ctx context.Context, interval time.Duration) Watch {
	return NewWatch(ctx, func(ctx context.Context, wake func()) { tick(ctx, interval, wake) }, nil)
}

// tick calls f every interval until ctx ends.
func tick(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// WatchRun implements Watcher with the file-system notifications of the
// run's file (fsnotify: inotify on Linux), watched from before the call
// returns. Where they are not available (the process has no inotify
// instance left, the file system does not support them) it falls back to
// looking at the file's size and time every WatchPoll. A run without a
// file yet is watched by the poll.
func (s *FileStore) WatchRun(ctx context.Context, runID string) (Watch, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	path := s.path(runID)
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		if err = fw.Add(path); err != nil {
			fw.Close()
		}
	}
	if err != nil {
		return statWatch(ctx, path), nil
	}
	return NewWatch(ctx, func(ctx context.Context, wake func()) {
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					wake()
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					wake() // events were dropped: the reader looks for itself
				}
			}
		}
	}, fw.Close), nil
}

// statWatch wakes when the size or modification time of the file at path
// changed, looking every WatchPoll.
func statWatch(ctx context.Context, path string) Watch {
	look := func() (int64, time.Time) {
		fi, err := os.Stat(path)
		if err != nil {
			return -1, time.Time{}
		}
		return fi.Size(), fi.ModTime()
	}
	size, mod := look()
	return NewWatch(ctx, func(ctx context.Context, wake func()) {
		tick(ctx, WatchPoll, func() {
			if s, m := look(); s != size || !m.Equal(mod) {
				size, mod = s, m
				wake()
			}
		})
	}, nil)
}
