package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// upserts records every search-attribute upsert of the harness's current
// environment: how many, and the AgentRunStep values set.
type upserts struct {
	mu    sync.Mutex
	n     int
	steps []string
}

func (h *harness) countUpserts() *upserts {
	u := &upserts{}
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.n++
		if sa, ok := args.Get(0).(temporal.SearchAttributes); ok {
			if v, ok := sa.GetKeyword(workflows.StepKey); ok {
				u.steps = append(u.steps, v)
			}
		}
	}).Return(nil)
	return u
}

func (u *upserts) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

func (h *harness) streamOffset(t *testing.T) int64 {
	t.Helper()
	v, err := h.env.QueryWorkflow(streams.OffsetQuery)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := v.Get(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// manyTickets is a script whose first reply asks for n tickets at once.
func manyTickets(n int) llm.Script {
	calls := make([]llm.ScriptedCall, n)
	for i := range calls {
		calls[i] = llm.ScriptedCall{Name: "create_ticket", Args: json.RawMessage(fmt.Sprintf(`{"title":"t%d","body":"b"}`, i))}
	}
	return llm.Script{Turns: []llm.Turn{{ToolCalls: calls}, {Text: "Filed " + llm.LastToolResult + "."}}}
}

// TestManyGatedCallsInOneReply: a reply with 100 gated calls parks the run
// with 100 pending markers while AgentRunStep stays under the server's
// 2 KiB limit (the first markers and "+N more"); approving them all files
// 100 tickets. A reply with MaxCallsPerReply+1 calls fails the run at once
// with one line naming the cap, and runs none of them.
func TestManyGatedCallsInOneReply(t *testing.T) {
	t.Parallel()
	t.Run("100 park and are approved", func(t *testing.T) {
		t.Parallel()
		h := newScriptHarness(t, manyTickets(100))
		h.env.SetTestTimeout(2 * time.Minute) // 100 tool activities on a loaded machine
		u := h.countUpserts()
		var parked workflows.State
		h.at(time.Minute, func() {
			parked = h.state(t)
			// All in one workflow task: an approval is valid while the run
			// waits on the call (once the first approved call runs, the
			// others wait again only when it is done).
			for i, p := range parked.Pending {
				if i == len(parked.Pending)-1 {
					h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": p.Marker})
					break
				}
				h.env.SignalWorkflowSkippingWorkflowTask(operator.SignalApprove, map[string]string{"Marker": p.Marker})
			}
		})
		h.run()
		r := h.result(t)
		if len(parked.Pending) != 100 || parked.Status != agent.StatusAwaitingApproval {
			t.Fatalf("parked %s with %d pending, want AwaitingApproval with 100", parked.Status, len(parked.Pending))
		}
		if h.ticketCount(t) != 100 || !strings.Contains(r.Answer, "TICKET-100") {
			t.Fatalf("%d tickets, answer %q; want 100 and TICKET-100", h.ticketCount(t), r.Answer)
		}
		var step string
		for _, s := range u.steps {
			if strings.HasPrefix(s, "tool/1/0/") {
				step = s
			}
		}
		if len(step) == 0 || len(step) > workflows.MaxStepAttr || !strings.HasSuffix(step, " more") {
			t.Fatalf("AgentRunStep %q (%d bytes); want the first markers and +N more, at most %d bytes", step, len(step), workflows.MaxStepAttr)
		}
	})
	t.Run("over the cap fails", func(t *testing.T) {
		t.Parallel()
		h := newScriptHarness(t, manyTickets(agent.MaxCallsPerReply+1))
		h.run()
		err := h.env.GetWorkflowError()
		want := fmt.Sprintf("llm/1 asked for %d tool calls in one reply; at most %d are run", agent.MaxCallsPerReply+1, agent.MaxCallsPerReply)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("workflow error %v; want one line containing %q", err, want)
		}
		if h.ticketCount(t) != 0 || h.started["CallTool"] != 0 {
			t.Fatalf("%d tickets, %d tool calls; want none", h.ticketCount(t), h.started["CallTool"])
		}
	})
}

func TestStepAttr(t *testing.T) {
	t.Parallel()
	markers := func(n int) []string {
		m := make([]string, n)
		for i := range m {
			m[i] = fmt.Sprintf("tool/12/%d/create_ticket", i)
		}
		return m
	}
	for _, tc := range []struct {
		n        int
		whole    bool
		wantMore int
	}{{1, true, 0}, {60, true, 0}, {80, false, 8}, {128, false, 56}} {
		got := workflows.StepAttr(markers(tc.n))
		if len(got) > workflows.MaxStepAttr {
			t.Fatalf("%d markers: %d bytes, want at most %d", tc.n, len(got), workflows.MaxStepAttr)
		}
		if tc.whole != (got == strings.Join(markers(tc.n), ",")) {
			t.Fatalf("%d markers: %q, whole %v", tc.n, got, tc.whole)
		}
		if !tc.whole {
			shown := strings.Count(got, "create_ticket")
			if want := fmt.Sprintf(",+%d more", tc.n-shown); !strings.HasSuffix(got, want) || tc.n-shown != tc.wantMore {
				t.Fatalf("%d markers: %q shows %d; want %d more", tc.n, got, shown, tc.wantMore)
			}
		}
	}
}

// TestRejectFlood: 200 bad signals to a parked run: the first QuietRejects
// cost a stream item each, the rest none, and none an upsert (the status
// and step stay as they are: versionFewerActions); the state counts
// them all and keeps the newest MaxRejected; the approval that follows is
// applied and the run completes with one ticket.
func TestRejectFlood(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.env.SetTestTimeout(time.Minute)
	u := h.countUpserts()
	const flood = 200
	var before, after int
	var offBefore, offAfter int64
	var st workflows.State
	h.at(time.Minute, func() {
		before, offBefore = u.count(), h.streamOffset(t)
		for i := range flood {
			h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": fmt.Sprintf("tool/9/%d/nothing", i)})
		}
	})
	h.at(2*time.Minute, func() {
		after, offAfter = u.count(), h.streamOffset(t)
		st = h.state(t)
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	r := h.result(t)
	if got := after - before; got != 0 {
		t.Fatalf("upserts for %d rejects: %d, want 0: the attributes did not change", flood, got)
	}
	if got := offAfter - offBefore; got != workflows.QuietRejects {
		t.Fatalf("stream items for %d rejects: %d, want %d", flood, got, workflows.QuietRejects)
	}
	if st.Rejects != flood || st.RejectStreak != flood || len(st.Rejected) != workflows.MaxRejected || st.Status != agent.StatusAwaitingApproval {
		t.Fatalf("state: %s, rejects %d, streak %d, %d kept; want AwaitingApproval, %d, %d, %d", st.Status, st.Rejects, st.RejectStreak, len(st.Rejected), flood, flood, workflows.MaxRejected)
	}
	if h.ticketCount(t) != 1 || !strings.Contains(r.Answer, "TICKET-1") {
		t.Fatalf("%d tickets, answer %q; want 1 and TICKET-1", h.ticketCount(t), r.Answer)
	}
	if s := h.state(t); s.RejectStreak != 0 || s.Rejects != flood {
		t.Fatalf("after the approval: streak %d, rejects %d; want 0 and %d", s.RejectStreak, s.Rejects, flood)
	}
}

// TestParkedRunContinuesAsNew: a run waiting for approval continues as new
// from its wait when Temporal suggests it, carrying its pending call (and
// the clock of its approval timeout); the next execution parks on the same
// marker and the approval completes it with one ticket and 3 model calls.
func TestParkedRunContinuesAsNew(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var execs []workflows.State
	inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt)}, func(run int) {
		if run == 0 {
			h.at(time.Minute, func() {
				h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": "tool/9/0/nothing"})
			})
		}
		h.at(2*time.Minute, func() {
			execs = append(execs, h.state(t))
			if run == 0 {
				h.env.SetContinueAsNewSuggested(true)
				return // the callback's own workflow task sees the suggestion
			}
			h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
		})
	})
	r := h.result(t)
	if len(inputs) != 2 || len(execs) != 2 {
		t.Fatalf("%d executions (%d parked); want 2", len(inputs), len(execs))
	}
	for i, s := range execs {
		if s.Status != agent.StatusAwaitingApproval || len(s.Pending) != 1 || s.Pending[0].Marker != ticketStep {
			t.Fatalf("execution %d: %s %+v; want AwaitingApproval on %s", i, s.Status, s.Pending, ticketStep)
		}
	}
	if c := inputs[1].Continued; c == nil || c.State.Rejects != 1 {
		t.Fatalf("continued %+v; want the refusal counted across the switch", c)
	}
	if h.ticketCount(t) != 1 || h.modelCalls() != 3 || !strings.Contains(r.Answer, "TICKET-1") {
		t.Fatalf("%d tickets, %d model calls, answer %q; want 1, 3, TICKET-1", h.ticketCount(t), h.modelCalls(), r.Answer)
	}
}

// TestOperatorCaps: a deny reason and a done result above MaxMessageLen,
// and a message past the queue's count or bytes, are refused by the update
// with one line naming the limit, and change nothing.
func TestOperatorCaps(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", operator.MaxMessageLen+1)
	for _, tc := range []struct {
		name, op string
		payload  any
		want     string
	}{
		{"deny reason", operator.SignalDeny, map[string]string{"Marker": ticketStep, "Reason": big}, fmt.Sprintf("the reason is %d bytes; want at most %d", len(big), operator.MaxMessageLen)},
		{"done result", operator.SignalReconcile, map[string]string{"Step": ticketStep, "Outcome": "done", "Result": big}, fmt.Sprintf("the done result is %d bytes; want at most %d", len(big), operator.MaxMessageLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			var refused error
			var before, after workflows.State
			h.at(time.Minute, func() {
				before = h.state(t)
				h.env.UpdateWorkflow(tc.op, "u1", &testsuite.TestUpdateCallback{
					OnAccept:   func() {},
					OnReject:   func(err error) { refused = err },
					OnComplete: func(any, error) { t.Errorf("%s was applied", tc.op) },
				}, tc.payload)
			})
			h.at(2*time.Minute, func() {
				after = h.state(t)
				h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
			})
			h.run()
			h.result(t)
			if refused == nil || !strings.Contains(refused.Error(), tc.want) || strings.Contains(refused.Error(), "\n") {
				t.Fatalf("update error %v; want one line containing %q", refused, tc.want)
			}
			if before.Status != after.Status || len(after.Rejected) != 0 || h.ticketCount(t) != 1 {
				t.Fatalf("state %s -> %s, %d rejected, %d tickets; want nothing changed, then 1 ticket", before.Status, after.Status, len(after.Rejected), h.ticketCount(t))
			}
		})
	}
}
