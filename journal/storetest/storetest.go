// Package storetest is the conformance suite of journal.Store: every
// backend (FileStore, MemStore, the PostgreSQL store) runs it from its own
// tests:
//
//	func TestMyStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) journal.Store { return newMyStore(t) })
//	}
//
// The suite checks the contract of journal.Store that holds without crashes
// or faults: order, the seen count and ErrConflict, refused records and run
// ids (ErrInvalid, nothing written), sorted List, and concurrent appenders.
// Each backend tests its own durability and fault handling besides.
package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// storeTestRecord returns the i-th record of a sample journal: a
// run.started, then step.started and step.completed pairs, with a signal and
// a run.completed in between, so that every type is exercised.
func storeTestRecord(i int) journal.Record {
	switch {
	case i == 0:
		return journal.Record{Type: journal.RunStarted, Input: agent.UserMessages("what is in the inbox?")}
	case i%7 == 6:
		return journal.Record{Type: journal.SignalRecord, Signal: &operator.Signal{Name: operator.SignalApprove, Marker: fmt.Sprintf("m-%d", i)}}
	case i%7 == 5:
		return journal.Record{Type: journal.RunCompleted, Answer: fmt.Sprintf("answer %d <b>&</b>\n", i)}
	case i%2 == 1:
		return journal.Record{Type: journal.StepStarted, Step: fmt.Sprintf("tool-%d", i), Kind: agent.KindWrite}
	default:
		return journal.Record{Type: journal.StepCompleted, Step: fmt.Sprintf("tool-%d", i-1),
			Result: agent.EncodeToolResult(agent.ToolResult{Content: fmt.Sprintf("result %d", i)})}
	}
}

// storeTestRecords returns records from..to-1 of the sample journal.
func storeTestRecords(from, to int) []journal.Record {
	var recs []journal.Record
	for i := from; i < to; i++ {
		recs = append(recs, storeTestRecord(i))
	}
	return recs
}

// storeAssertRecords fails unless s holds exactly want for runID.
func storeAssertRecords(t *testing.T, s journal.Store, runID string, want []journal.Record) {
	t.Helper()
	got, err := s.Load(runID)
	if err != nil {
		t.Fatalf("Load(%s): %v", runID, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Load(%s): %d records, want %d", runID, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			t.Fatalf("Load(%s): record %d is %s, want %s", runID, i+1, g, w)
		}
	}
}

func storeAssertList(t *testing.T, s journal.Store, want ...string) {
	t.Helper()
	got, err := s.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

// Run runs the conformance suite as parallel subtests of t. open returns a
// new, empty store for one subtest; it may use t.TempDir and t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) journal.Store) {
	t.Run("LoadUnknownRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		recs, err := s.Load("run-1")
		if err != nil || len(recs) != 0 {
			t.Fatalf("Load of an unknown run = %d records, %v; want 0, nil", len(recs), err)
		}
		storeAssertList(t, s)
	})

	t.Run("AppendsInOrder", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		all := storeTestRecords(0, 10)
		for _, step := range []struct{ from, to int }{{0, 1}, {1, 3}, {3, 4}, {4, 10}} {
			if err := s.Append("run-1", step.from, all[step.from:step.to]...); err != nil {
				t.Fatalf("Append(seen=%d, %d records): %v", step.from, step.to-step.from, err)
			}
			storeAssertRecords(t, s, "run-1", all[:step.to])
		}
		// Appending nothing checks seen and changes nothing.
		if err := s.Append("run-1", 10); err != nil {
			t.Fatalf("Append(seen=10) of no records: %v", err)
		}
		if err := s.Append("run-2", 0); err != nil {
			t.Fatalf("Append(seen=0) of no records to a new run: %v", err)
		}
		storeAssertRecords(t, s, "run-1", all)
		storeAssertList(t, s, "run-1")
	})

	t.Run("SeenMismatch", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		recs := storeTestRecords(0, 3)
		if err := s.Append("run-1", 0, recs...); err != nil {
			t.Fatal(err)
		}
		for _, seen := range []int{0, 2, 4} {
			err := s.Append("run-1", seen, storeTestRecord(3))
			if !errors.Is(err, journal.ErrConflict) {
				t.Fatalf("Append(seen=%d) to 3 records = %v, want journal.ErrConflict", seen, err)
			}
			if want := fmt.Sprintf("holds 3 records, caller saw %d", seen); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if err := s.Append("run-1", 2); !errors.Is(err, journal.ErrConflict) {
			t.Fatalf("Append(seen=2) of no records to 3 records = %v, want journal.ErrConflict", err)
		}
		if err := s.Append("run-2", 1, storeTestRecord(0)); !errors.Is(err, journal.ErrConflict) {
			t.Fatalf("Append(seen=1) to an unknown run = %v, want journal.ErrConflict", err)
		}
		storeAssertRecords(t, s, "run-1", recs)
		storeAssertRecords(t, s, "run-2", nil)
		storeAssertList(t, s, "run-1") // no journal was created for run-2
	})

	t.Run("InvalidRecords", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		bad := []journal.Record{
			{Type: "bogus"},
			{},
			{Type: journal.StepCompleted, Step: "s", Result: json.RawMessage(`{not json`)},
		}
		for _, rec := range bad {
			// The good record before the bad one is not written either.
			err := s.Append("run-1", 0, storeTestRecord(0), rec)
			if !errors.Is(err, operator.ErrInvalid) {
				t.Fatalf("Append of %+v = %v, want operator.ErrInvalid", rec, err)
			}
		}
		if err := s.Append("run-1", -1, storeTestRecord(0)); !errors.Is(err, operator.ErrInvalid) {
			t.Fatalf("Append(seen=-1) = %v, want operator.ErrInvalid", err)
		}
		storeAssertRecords(t, s, "run-1", nil)
		storeAssertList(t, s)
	})

	t.Run("ListSorted", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		storeAssertList(t, s)
		ids := []string{"b", "a.b", "a", "a-b", "A", "9", "a_b"}
		for _, id := range ids {
			if err := s.Append(id, 0, storeTestRecord(0)); err != nil {
				t.Fatalf("Append(%s): %v", id, err)
			}
		}
		storeAssertList(t, s, "9", "A", "a", "a-b", "a.b", "a_b", "b")
	})

	t.Run("InvalidRunIDs", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, id := range []string{"", "../x", "/abs", ".hidden", "a b", "ré", "a/b", strings.Repeat("a", operator.MaxRunIDLen+1)} {
			if _, err := s.Load(id); !errors.Is(err, operator.ErrInvalid) {
				t.Errorf("Load(%q) = %v, want operator.ErrInvalid", id, err)
			}
			if err := s.Append(id, 0, storeTestRecord(0)); !errors.Is(err, operator.ErrInvalid) {
				t.Errorf("Append(%q) = %v, want operator.ErrInvalid", id, err)
			}
		}
		storeAssertList(t, s)
	})

	t.Run("ConcurrentAppenders", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const workers, each = 8, 20
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					rec := journal.Record{Type: journal.StepStarted, Step: fmt.Sprintf("w%d-%02d", w, i), Kind: agent.KindRead}
					for {
						recs, err := s.Load("run-1")
						if err != nil {
							t.Errorf("worker %d: Load: %v", w, err)
							return
						}
						err = s.Append("run-1", len(recs), rec)
						if err == nil {
							break
						}
						if !errors.Is(err, journal.ErrConflict) {
							t.Errorf("worker %d: Append: %v", w, err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		recs, err := s.Load("run-1")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != workers*each {
			t.Fatalf("%d records, want %d", len(recs), workers*each)
		}
		next := make([]int, workers) // each worker's records appear once, in its order
		for _, rec := range recs {
			var w, i int
			if _, err := fmt.Sscanf(rec.Step, "w%d-%d", &w, &i); err != nil || w < 0 || w >= workers {
				t.Fatalf("unexpected record %+v", rec)
			}
			if i != next[w] {
				t.Fatalf("worker %d: record %d found, want %d (duplicate or out of order)", w, i, next[w])
			}
			next[w]++
		}
		for w, n := range next {
			if n != each {
				t.Errorf("worker %d: %d records, want %d", w, n, each)
			}
		}
	})
}
