package journal

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// The helpers below serve the package's own file store tests, which cannot
// import journal/storetest (it imports journal). They build the same
// sample journal as storetest.

// storeTestRecord returns the i-th record of a sample journal: a
// run.started, then step.started and step.completed pairs, with a signal and
// a run.completed in between, so that every type is exercised.
func storeTestRecord(i int) Record {
	switch {
	case i == 0:
		return Record{Type: RunStarted, Input: agent.UserMessages("what is in the inbox?")}
	case i%7 == 6:
		return Record{Type: SignalRecord, Signal: &operator.Signal{Name: operator.SignalApprove, Marker: fmt.Sprintf("m-%d", i)}}
	case i%7 == 5:
		return Record{Type: RunCompleted, Answer: fmt.Sprintf("answer %d <b>&</b>\n", i)}
	case i%2 == 1:
		return Record{Type: StepStarted, Step: fmt.Sprintf("tool-%d", i), Kind: agent.KindWrite}
	default:
		return Record{Type: StepCompleted, Step: fmt.Sprintf("tool-%d", i-1),
			Result: agent.EncodeToolResult(agent.ToolResult{Content: fmt.Sprintf("result %d", i)})}
	}
}

// storeTestRecords returns records from..to-1 of the sample journal.
func storeTestRecords(from, to int) []Record {
	var recs []Record
	for i := from; i < to; i++ {
		recs = append(recs, storeTestRecord(i))
	}
	return recs
}

// storeAssertRecords fails unless s holds exactly want for runID.
func storeAssertRecords(t *testing.T, s Store, runID string, want []Record) {
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

func storeAssertList(t *testing.T, s Store, want ...string) {
	t.Helper()
	got, err := s.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}
