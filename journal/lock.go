package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBusy means another process drives the run: [Journal.Run] refused to
// drive it too, and wrote nothing.
var ErrBusy = errors.New("run is busy")

// BusyError names the process that drives a run. It unwraps to ErrBusy.
type BusyError struct {
	RunID string
	// PID is the driving process's id, 0 when it could not be read.
	PID int
	// Host is the driving process's host, "" for this one.
	Host string
}

func (e *BusyError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	if e.Host != "" {
		who += " on host " + e.Host
	}
	return fmt.Sprintf("run %s is busy: %s drives it; nothing was written: run this again once it has stopped", e.RunID, who)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// Locker is a Store that lets one process at a time drive a run. Run takes
// the lock of a Store that is a Locker for as long as it drives the run, so
// that a second driver never mistakes the write the first one is running
// for an Indeterminate one. Signals and reads do not take it.
type Locker interface {
	// LockRun takes the run's driver lock without waiting: a run that
	// another process holds is a *BusyError. release gives the lock back;
	// a process that ends releases its locks too.
	LockRun(ctx context.Context, runID string) (release func(), err error)
}

var _ Locker = (*FileStore)(nil)

// lockExt ends the name of a run's lock file, beside its journal.
const lockExt = ".lock"

// LockRun implements Locker with an exclusive flock(2) on <dir>/<run
// id>.lock, which holds the pid of the process that took it last. The file
// is never removed: removing a lock file races with a process opening it.
// Like the journal's own locks, it needs a local file system.
func (s *FileStore) LockRun(ctx context.Context, runID string) (func(), error) {
	if err := ValidRunID(runID); err != nil {
		return nil, err
	}
	path := filepath.Join(s.dir, runID+lockExt)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		defer f.Close()
		return nil, &BusyError{RunID: runID, PID: lockHolder(ctx, f)}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	// The pid is for people; the lock itself is the kernel's.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// lockHolder reads the pid in a held lock file. Its holder writes it just
// after taking the lock, so an empty file is read again for a moment.
func lockHolder(ctx context.Context, f *os.File) int {
	for range 20 {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
			return pid
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0
}

// lockRun takes the driver lock of runID when the store is a Locker.
func (j *Journal) lockRun(ctx context.Context, runID string) (func(), error) {
	if l, ok := j.Store.(Locker); ok {
		return l.LockRun(ctx, runID)
	}
	return func() {}, nil
}
