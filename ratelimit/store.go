package ratelimit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Store keeps the pools' shared states.
type Store interface {
	// Update calls fn with the pool's state (the zero State for a pool
	// never seen) and keeps what fn leaves in it, as one atomic step
	// against every other Update of the pool through the same store: no
	// two overlap. An error of fn keeps the state as it was and is
	// returned. A ctx already done returns its error, fn uncalled.
	Update(ctx context.Context, pool string, fn func(*State) error) error
}

// MemStore is one process's Store. The zero MemStore is ready.
type MemStore struct {
	mu     sync.Mutex
	states map[string]State
}

var _ Store = (*MemStore)(nil)

// Update implements Store.
func (m *MemStore) Update(ctx context.Context, pool string, fn func(*State) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.states[pool]
	s.Waiting = maps.Clone(s.Waiting) // fn's changes stay its own until it returns nil
	if err := fn(&s); err != nil {
		return err
	}
	if m.states == nil {
		m.states = map[string]State{}
	}
	m.states[pool] = s
	return nil
}

// FileStore keeps each pool's state in <dir>/<pool>.json, updated under an
// exclusive flock(2) on the file: the processes of one host that use one
// folder share their pools. Writes are not fsynced (see the package doc).
type FileStore struct {
	dir string
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns the FileStore of dir, which it creates if need be.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("rate limits: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

// Dir is the store's folder.
func (f *FileStore) Dir() string { return f.dir }

var _ Locator = (*FileStore)(nil)

// Locate implements Locator: the pool's file.
func (f *FileStore) Locate(pool string) string { return f.path(pool) }

func (f *FileStore) path(pool string) string { return filepath.Join(f.dir, pool+".json") }

// maxStateSize bounds a state file's size: a bigger one is not ours. A
// state of MaxWaiting callers (about 60 B each) fits, with room to spare.
const maxStateSize = 1 << 20

// Update implements Store. A state file that is not a state (damaged, or
// written by someone else) is replaced: the pool starts afresh.
func (f *FileStore) Update(ctx context.Context, pool string, fn func(*State) error) error {
	if err := CheckPool(pool); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	file, err := os.OpenFile(f.path(pool), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", pool, err)
	}
	defer file.Close()
	if err := flock(ctx, file); err != nil {
		return fmt.Errorf("rate limit %s: lock: %w", pool, err)
	}
	b, err := io.ReadAll(io.LimitReader(file, maxStateSize+1))
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", pool, err)
	}
	var s State
	if len(bytes.TrimSpace(b)) > 0 && len(b) <= maxStateSize {
		_ = json.Unmarshal(b, &s) // a damaged state starts afresh
	}
	if err := fn(&s); err != nil {
		return err
	}
	out, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := file.Truncate(0); err != nil {
		return fmt.Errorf("rate limit %s: %w", pool, err)
	}
	if _, err := file.WriteAt(out, 0); err != nil {
		return fmt.Errorf("rate limit %s: %w", pool, err)
	}
	return nil // closing the file gives the lock back
}

// flock takes an exclusive flock(2) on f, waiting for it while ctx lasts:
// the lock is held for microseconds, so it tries without blocking, often.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		}
		if err := sleep(ctx, lockPoll); err != nil {
			return err
		}
	}
}
