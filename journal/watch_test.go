package journal_test

import (
	"testing"
	"time"

	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/journal/storetest"
)

// TestFileStoreWatch: a FileStore's watch of a run's file wakes on another
// FileStore's append to it (fsnotify), and only then.
func TestFileStoreWatch(t *testing.T) {
	t.Parallel()
	storetest.RunWatch(t, func(t *testing.T) (journal.Store, journal.Store) {
		dir := t.TempDir()
		return mustFileStore(t, dir), mustFileStore(t, dir)
	})
}

// TestPollWatch: the fallback of a store that cannot notify wakes every
// interval, and stops when closed.
func TestPollWatch(t *testing.T) {
	t.Parallel()
	w := journal.PollWatch(t.Context(), 20*time.Millisecond)
	for range 3 {
		select {
		case <-w.C():
		case <-time.After(time.Second):
			t.Fatal("the poll did not wake")
		}
	}
	w.Close()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-w.C():
		select {
		case <-w.C():
			t.Fatal("a closed poll goes on waking")
		case <-time.After(100 * time.Millisecond):
		}
	default:
	}
}

func mustFileStore(t *testing.T, dir string) *journal.FileStore {
	t.Helper()
	s, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
