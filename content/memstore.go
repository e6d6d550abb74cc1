package content

import (
	"context"
	"fmt"
	"sync"
)

// MemStore is a Store in memory, for tests: the semantics of FileStore
// (keys, errors, copies) without durability. It copies bytes in and out, so
// callers may modify what they passed to Put or got from Get. The zero value
// is ready to use and it is safe for concurrent use.
type MemStore struct {
	mu    sync.Mutex
	blobs map[string][]byte // key -> bytes, never modified
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{blobs: make(map[string][]byte)}
}

// Put stores a copy of data and returns its key.
func (m *MemStore) Put(ctx context.Context, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	key := KeyOf(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blobs[key]; !ok {
		if m.blobs == nil {
			m.blobs = make(map[string][]byte)
		}
		m.blobs[key] = append([]byte{}, data...)
	}
	return key, nil
}

// Get returns a copy of the bytes stored under key, or an error wrapping
// ErrNotFound.
func (m *MemStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	data, ok := m.blobs[key]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return append([]byte{}, data...), nil
}
