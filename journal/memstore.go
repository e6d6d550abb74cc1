package journal

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/agentrun/agentrun/operator"
)

// MemStore is a Store in memory, for tests and for anything that wants a
// store without a disk. It has the semantics of FileStore (run id checks,
// ErrConflict, records refused by the encoder), without durability. It keeps
// records in their encoded form, so Load returns copies that the caller may
// modify. The zero value is ready to use and it is safe for concurrent use.
type MemStore struct {
	mu   sync.Mutex
	runs map[string][][]byte // run id -> encoded lines, oldest first
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{runs: make(map[string][][]byte)}
}

// Load returns the records of a run, oldest first; an unknown run has none.
func (m *MemStore) Load(runID string) ([]Record, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	lines := slices.Clone(m.runs[runID]) // the lines themselves are never modified
	m.mu.Unlock()
	var recs []Record
	for i, line := range lines {
		rec, err := decodeLine(line)
		if err != nil { // cannot happen: every line came from encodeRecord
			return nil, fmt.Errorf("load %s: record %d: %v: %w", runID, i+1, err, ErrCorrupt)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// Append adds recs to the run's journal if it holds exactly seen records;
// otherwise it returns ErrConflict and changes nothing.
func (m *MemStore) Append(runID string, seen int, recs ...Record) error {
	if err := operator.ValidRunID(runID); err != nil {
		return err
	}
	if seen < 0 {
		return fmt.Errorf("append %s: %w seen count %d: it is negative", runID, operator.ErrInvalid, seen)
	}
	lines := make([][]byte, 0, len(recs))
	for i, rec := range recs {
		line, err := encodeRecord(rec)
		if err != nil {
			return fmt.Errorf("append %s: record %d: %w", runID, i+1, err)
		}
		lines = append(lines, line)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := checkSeen(runID, len(m.runs[runID]), seen); err != nil {
		return err
	}
	if len(lines) == 0 {
		return nil
	}
	if m.runs == nil {
		m.runs = make(map[string][][]byte)
	}
	m.runs[runID] = append(m.runs[runID], lines...)
	return nil
}

// List returns the ids of the runs with at least one record, sorted.
func (m *MemStore) List() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.runs)), nil
}
