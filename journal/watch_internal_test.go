package journal

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStatWatch: the fallback of a FileStore without file-system
// notifications wakes within WatchPoll of a write to the file, and not
// while nothing changes.
func TestStatWatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(path, []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := statWatch(t.Context(), path)
	defer w.Close()
	select {
	case <-w.C():
		t.Fatal("woke with no change")
	case <-time.After(WatchPoll + 200*time.Millisecond):
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if _, err := f.WriteString("b\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	select {
	case <-w.C():
		if took := time.Since(at); took > WatchPoll+500*time.Millisecond {
			t.Fatalf("woke %v after the write; the poll is every %v", took, WatchPoll)
		}
	case <-time.After(WakeBound):
		t.Fatalf("no wake-up within %v of a write", WakeBound)
	}
}
