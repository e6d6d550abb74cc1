package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentrun/agentrun/operator"
)

// ErrBusy means another process drives the run: the local engine
// (local.Engine.Drive) refused to drive it too, and wrote nothing.
var ErrBusy = errors.New("run is busy")

// BusyError names the process that drives a run. It unwraps to ErrBusy.
type BusyError struct {
	RunID string
	// PID is the driving process's id, 0 when it could not be read.
	PID int
	// Host is the driving process's host, "" for this one.
	Host string
	// Follows is set when the driver follows the run (local.Engine.Follow): it
	// waits for the operator's records and goes on when they land.
	Follows bool
}

func (e *BusyError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	if e.Host != "" {
		who += " on host " + e.Host
	}
	if e.Follows {
		return fmt.Sprintf("run %s is busy: %s drives it and follows it (it goes on by itself when a person decides); nothing was written: run this again once it has stopped", e.RunID, who)
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
	// another process holds is a *BusyError. The lock is given back with
	// its Release; a process that ends releases its locks too.
	LockRun(ctx context.Context, runID string) (Lock, error)
}

// Holders is a Locker that tells who drives a run without taking its
// lock and without writing anything.
type Holders interface {
	// Holder returns a *BusyError naming the process that drives runID
	// (and whether it follows the run), or nil when none does.
	Holder(ctx context.Context, runID string) (*BusyError, error)
}

var _ Holders = (*FileStore)(nil)

// Holder implements Holders: a shared flock(2) on the run's lock file,
// tried without waiting and given back at once, is refused while a driver
// holds its exclusive one; then the file names the driver.
func (s *FileStore) Holder(ctx context.Context, runID string) (*BusyError, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(s.dir, runID+lockExt))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // never driven
	}
	if err != nil {
		return nil, fmt.Errorf("who drives run %s: %w", runID, err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		pid, follows := lockHolder(ctx, f)
		return &BusyError{RunID: runID, PID: pid, Follows: follows}, nil
	case err != nil:
		return nil, fmt.Errorf("who drives run %s: %w", runID, err)
	}
	return nil, nil // closing the file gives the shared lock back
}

// Lock is a run's driver lock, held from LockRun until Release.
type Lock interface {
	// Held returns nil when the lock is still this process's, and an
	// error saying why not otherwise (a lock that lives on a database
	// connection goes with the connection). Run calls it before every
	// step, so it must be cheap: at most one round trip.
	Held(ctx context.Context) error
	// Release gives the lock back. It is safe to call more than once.
	Release()
}

// ErrLockLost means that a process lost a run's driver lock while it drove
// the run: the local engine (local.Engine.Drive) stopped before the next
// step, because another process may drive the run now. Running it again resumes it (or is
// refused as busy while that other process drives it).
var ErrLockLost = errors.New("lost the driver lock")

// LockLostError is Run stopping because its driver lock was lost. It
// unwraps to ErrLockLost and to the reason the lock gave.
type LockLostError struct {
	RunID string
	// Step is the step Run did not run.
	Step string
	// Err is why the lock is no longer held (Lock.Held's error).
	Err error
}

func (e *LockLostError) Error() string {
	return fmt.Sprintf("lost the driver lock of run %s (%v): stopped before step %s", e.RunID, e.Err, e.Step)
}

func (e *LockLostError) Unwrap() []error { return []error{ErrLockLost, e.Err} }

var _ Locker = (*FileStore)(nil)

// lockExt ends the name of a run's lock file, beside its journal.
const lockExt = ".lock"

// probeRetries and probeWait bound how long LockRun tries again when the
// lock is refused: long enough to outlast a Holder probe's shared lock
// (microseconds), short enough that a run a driver holds is reported busy
// at once for people.
const (
	probeRetries = 5
	probeWait    = 10 * time.Millisecond
)

// LockRun implements Locker with an exclusive flock(2) on <dir>/<run
// id>.lock, which holds the pid of the process that took it last. The file
// is never removed: removing a lock file races with a process opening it.
// Like the journal's own locks, it needs a local file system. The kernel
// keeps the lock as long as the file is open, so for as long as the
// process lives: Held has nothing to check.
func (s *FileStore) LockRun(ctx context.Context, runID string) (Lock, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	path := filepath.Join(s.dir, runID+lockExt)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
	if err != nil {
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	// A Holder probe holds a shared lock for an instant: a refusal is
	// tried again for a moment before it means a driver holds the run.
	for tries := 0; ; {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) && tries < probeRetries && ctx.Err() == nil {
			tries++
			time.Sleep(probeWait)
			continue
		}
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		defer f.Close()
		pid, follows := lockHolder(ctx, f)
		return nil, &BusyError{RunID: runID, PID: pid, Follows: follows}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock run %s: %w", runID, err)
	}
	// The pid is for people; the lock itself is the kernel's.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &fileLock{f: f}, nil
}

// fileLock is a FileStore's driver lock: an open file holding a flock.
type fileLock struct {
	mu sync.Mutex
	f  *os.File // nil once released
}

// Held implements Lock: a flock lasts as long as its open file, which only
// Release closes, so a lock not released is held.
func (l *fileLock) Held(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errReleased
	}
	return nil
}

// followTag follows the pid in the lock file of a driver that follows
// its run.
const followTag = " follow"

// MarkFollowing implements FollowMarker: the lock file says "PID follow".
func (l *fileLock) MarkFollowing() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_, _ = l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+followTag+"\n"), 0)
	}
}

// Release implements Lock.
func (l *fileLock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// errReleased is Held's error for a lock its own process released.
var errReleased = errors.New("it was released")

// lockHolder reads the pid in a held lock file, and whether its driver
// follows the run. Its holder writes it just after taking the lock, so an
// empty file is read again for a moment.
func lockHolder(ctx context.Context, f *os.File) (pid int, follows bool) {
	for range 20 {
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		text := strings.TrimSpace(string(b[:n]))
		text, follows = strings.CutSuffix(text, followTag)
		if pid, err := strconv.Atoi(text); err == nil && pid > 0 {
			return pid, follows
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return 0, false
}

// FollowMarker is a Lock that can tell others that its driver follows the
// run (local.Engine.Follow): a BusyError of a second driver says so (Follows),
// and reconcile's message --wait waits for the answer only then.
type FollowMarker interface {
	MarkFollowing()
}
