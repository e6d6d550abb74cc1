package local_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// slowRead moves the test's clock by d while the table's read runs.
type slowRead struct {
	inner agent.Executor
	now   *time.Time
	d     time.Duration
}

func (s slowRead) Execute(ctx context.Context, st agent.Step) (json.RawMessage, error) {
	if st.Name == testenv.ExpiryRead {
		*s.now = s.now.Add(s.d)
	}
	return s.inner.Execute(ctx, st)
}

// TestExpiryTable runs the approval-expiry table (testenv.ExpiryCases) on
// the local engine, on a clock the test moves; workflows/expiry_table_test.go
// runs the same table on the workflow.
func TestExpiryTable(t *testing.T) {
	t.Parallel()
	for _, c := range testenv.ExpiryCases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			demo := tools.Demo(tools.DemoConfig{Tickets: f.tickets})
			demo[1] = tools.Apply(demo[1], tools.Override{ApprovalTimeout: c.Timeout})
			set, err := tools.NewSet(demo...)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			now := start
			f.j.Loop, f.j.Now = agent.Loop{Tools: set.Specs()}, func() time.Time { return now }
			f.exec = &counting{inner: slowRead{inner: &execute.Executor{Model: llm.NewScripted(testenv.ExpiryScript()), Tools: set, Content: content.NewMemStore()}, now: &now, d: c.ReadTakes}, calls: map[string]int{}}
			const id = "expiry"
			if o := f.run(t, id); o.Status != agent.StatusAwaitingApproval || o.Pending[0].Marker != testenv.ExpiryMarker {
				t.Fatalf("first run: %+v, want AwaitingApproval at %s", o, testenv.ExpiryMarker)
			}
			if c.Look > 0 {
				now = start.Add(c.Look)
				if o := f.run(t, id); o.Status != agent.StatusAwaitingApproval || len(expiredMarkers(f.records(t, id))) != 0 {
					t.Fatalf("at %s: %s, expired %v; want AwaitingApproval, none expired", c.Look, o.Status, expiredMarkers(f.records(t, id)))
				}
			}
			end := start.Add(c.EndsAt)
			if c.Decide != "" {
				now = start.Add(c.At)
				f.signal(t, id, c.Signal())
				end = now.Add(time.Hour) // long after the timeout: a decided call does not expire
			}
			now = end
			o := f.run(t, id)
			if o.Status != agent.StatusCompleted {
				t.Fatalf("at the end: %+v, want Completed", o)
			}
			want := []string(nil)
			if c.Expired {
				want = []string{testenv.ExpiryMarker}
			}
			if got := expiredMarkers(f.records(t, id)); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("expired records %v, want %v", got, want)
			}
			info, err := f.j.Show(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Expired) != len(want) || c.Expired && (info.Expired[0].Marker != want[0] || info.Expired[0].Reason != operator.ExpiredReason(c.Timeout)) {
				t.Fatalf("show: expired %+v, want %v after %s", info.Expired, want, c.Timeout)
			}
			if !strings.Contains(o.Answer, c.AnswerHas) {
				t.Errorf("answer %q, want it to contain %q", o.Answer, c.AnswerHas)
			}
			if n := f.exec.count("llm/"); n != c.ModelCalls {
				t.Errorf("model calls: %d, want %d", n, c.ModelCalls)
			}
			if n := f.ticketCount(t); n != c.Tickets {
				t.Errorf("tickets: %d, want %d", n, c.Tickets)
			}
		})
	}
}

// expiredMarkers are the markers of the expired denials recorded.
func expiredMarkers(recs []journal.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Type == journal.SignalRecord && r.Signal != nil && r.Signal.Expired {
			out = append(out, r.Signal.Marker)
		}
	}
	return out
}
