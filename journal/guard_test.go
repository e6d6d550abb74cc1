package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
)

// TestRunStepCosts: a model step, a read step and an idempotent write each
// cost one append and one fsync (their step.completed record); a write
// costs two of each, its start record being fsynced before it runs. A
// recorded step costs nothing; a model or read step that fails (or whose
// process dies) inside leaves nothing, and runs again.
func TestRunStepCosts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		step        agent.Step
		wantRecords []string
	}{
		{agent.Step{Name: "llm/1", Kind: agent.KindModel}, []string{"step.completed llm/1 model"}},
		{agent.Step{Name: "tool/1/0/lookup", Kind: agent.KindRead}, []string{"step.completed tool/1/0/lookup read"}},
		{agent.Step{Name: "tool/1/0/put", Kind: agent.KindWrite, Idempotent: true}, []string{"step.completed tool/1/0/put write idempotent"}},
		{agent.Step{Name: hand.TicketStep, Kind: agent.KindWrite}, []string{"step.started " + hand.TicketStep + " write", "step.completed " + hand.TicketStep + " write"}},
	}
	for _, c := range cases {
		t.Run(c.step.Name, func(t *testing.T) {
			t.Parallel()
			store, err := journal.NewFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			j := &journal.Guard{Store: store}
			if err := store.Append("r", 0, journal.Record{Type: journal.RunStarted, Input: agent.UserMessages(hand.Prompt)}); err != nil {
				t.Fatal(err)
			}
			calls := 0
			result := agent.EncodeToolResult(agent.ToolResult{Content: "done"})
			fail := errors.New("the step failed")
			fn := func(context.Context) (json.RawMessage, error) {
				calls++
				if calls == 1 && c.step.Kind != agent.KindWrite {
					return nil, fail
				}
				return result, nil
			}
			before := store.Stats()
			if c.step.Kind != agent.KindWrite { // a failure inside leaves nothing
				if _, err := j.RunStep(t.Context(), "r", c.step, fn); !errors.Is(err, fail) {
					t.Fatalf("failing RunStep: %v, want the step's error", err)
				}
				if st := store.Stats(); st.Appends != before.Appends || st.Fsyncs != before.Fsyncs {
					t.Fatalf("a failed %s step cost %d appends, %d fsyncs; want none", c.step.Kind, st.Appends-before.Appends, st.Fsyncs-before.Fsyncs)
				}
			}
			res, err := j.RunStep(t.Context(), "r", c.step, fn)
			if err != nil || string(res) != string(result) {
				t.Fatalf("RunStep = %s, %v; want %s", res, err, result)
			}
			after := store.Stats()
			wantAppends := int64(len(c.wantRecords))
			if n := after.Appends - before.Appends; n != wantAppends {
				t.Errorf("appends: %d, want %d", n, wantAppends)
			}
			if n := after.Fsyncs - before.Fsyncs; n != wantAppends {
				t.Errorf("fsyncs: %d, want %d", n, wantAppends)
			}
			recs, err := store.Load("r")
			if err != nil {
				t.Fatal(err)
			}
			if got := testenv.Describe(recs[1:]); strings.Join(got, "|") != strings.Join(c.wantRecords, "|") {
				t.Fatalf("records: %q, want %q", got, c.wantRecords)
			}
			// Recorded: the result, without calling fn or writing.
			n := calls
			if res, err := j.RunStep(t.Context(), "r", c.step, fn); err != nil || string(res) != string(result) || calls != n {
				t.Fatalf("recorded step: %s, %v after %d more calls; want the result, no call", res, err, calls-n)
			}
			if st := store.Stats(); st.Appends != after.Appends || st.Fsyncs != after.Fsyncs {
				t.Fatal("a recorded step wrote")
			}
		})
	}
}
