package execute_test

import (
	"fmt"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
)

// BenchmarkModelStepAtTurn measures one model step of a run that has read
// a 4 KB document every turn, on a warm executor, early and late in the
// run. Besides time it reports what the step costs the store: gets, puts
// and bytes put per step, which do not depend on the turn. Time and memory
// do, a little: the step hands the model a new list of every message
// (about 120 bytes a message, the texts shared).
func BenchmarkModelStepAtTurn(b *testing.B) {
	for _, turn := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("turn=%d", turn), func(b *testing.B) {
			ctx := b.Context()
			store := &content.Counting{Store: content.NewMemStore()}
			set := newSet(b, &docTool{name: "read", size: docSize})
			script := reads(turn+1, "read", keyArgs("bench"), "done")
			e := &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: store}
			d := newDriver(set, "", turn+2, agent.UserMessages("benchmark"))
			step := d.runTo(b, ctx, e, turn)
			before := store.Stats()
			for b.Loop() {
				if _, err := e.Execute(ctx, step); err != nil {
					b.Fatal(err)
				}
			}
			s := since(store, before)
			n := float64(b.N)
			b.ReportMetric(float64(s.Gets)/n, "gets/op")
			b.ReportMetric(float64(s.Puts)/n, "puts/op")
			b.ReportMetric(float64(s.BytesPut)/n, "putB/op")
		})
	}
}
