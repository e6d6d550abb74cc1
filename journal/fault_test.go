package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
)

// flaky is a store whose next append fails: either before writing
// (written false) or after the record reached the store (written true, as
// when a write lands and its fsync fails).
type flaky struct {
	journal.Store
	failNext bool
	written  bool
}

var errDisk = errors.New("injected: fsync failed")

func (s *flaky) Append(runID string, seen int, recs ...journal.Record) error {
	if !s.failNext {
		return s.Store.Append(runID, seen, recs...)
	}
	s.failNext = false
	if s.written {
		if err := s.Store.Append(runID, seen, recs...); err != nil {
			return err
		}
	}
	return errDisk
}

// TestRunStepStoreFaults: a failing append returns an error, and the
// journal never treats that record as certainly absent: a write whose
// start or result may not be on disk is never run twice.
func TestRunStepStoreFaults(t *testing.T) {
	t.Parallel()
	write := agent.Step{Name: hand.TicketStep, Kind: agent.KindWrite}
	cases := []struct {
		name       string
		failAppend int  // which append fails: 1 the start record, 2 the result record
		written    bool // whether the failed record reached the store
		wantCalls  int  // calls of fn over two RunSteps
		wantSecond error
	}{
		{"start record lost", 1, false, 1, nil},
		{"start record written, fsync failed", 1, true, 0, journal.ErrIndeterminate},
		{"result record lost", 2, false, 1, journal.ErrIndeterminate},
		{"result record written, fsync failed", 2, true, 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := &flaky{Store: journal.NewMemStore(), written: c.written}
			j := &journal.Guard{Store: store}
			calls := 0
			fn := func(context.Context) (json.RawMessage, error) {
				calls++
				store.failNext = c.failAppend == 2
				return agent.EncodeToolResult(agent.ToolResult{Content: "TICKET-1"}), nil
			}
			store.failNext = c.failAppend == 1
			if _, err := j.RunStep(t.Context(), "r", write, fn); !errors.Is(err, errDisk) {
				t.Fatalf("first RunStep: %v, want the injected error", err)
			}
			_, err := j.RunStep(t.Context(), "r", write, fn)
			if c.wantSecond == nil && err != nil || c.wantSecond != nil && !errors.Is(err, c.wantSecond) {
				t.Fatalf("second RunStep: %v, want %v", err, c.wantSecond)
			}
			if calls != c.wantCalls {
				t.Fatalf("fn calls: %d, want %d", calls, c.wantCalls)
			}
		})
	}
}
