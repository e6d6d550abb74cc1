package workflows_test

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// TestApproveByDigest: the state names each pending call's arguments
// digest; an approve whose digest or execution is not the run's is
// refused in one line naming what was given and what is pending, and
// changes nothing; a signal with the pending digest lets the call run, and
// one without a digest keeps working (a second one is already decided).
func TestApproveByDigest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var rejected []string
	cb := func(name string) *testsuite.TestUpdateCallback {
		return &testsuite.TestUpdateCallback{
			OnAccept:   func() { t.Errorf("update %s was accepted", name) },
			OnReject:   func(err error) { rejected = append(rejected, err.Error()) },
			OnComplete: func(any, error) {},
		}
	}
	const stale = "sha256:0000000000000000"
	var digest string
	h.at(time.Minute, func() {
		s := h.state(t)
		if s.Status != agent.StatusAwaitingApproval || len(s.Pending) != 1 || !agent.ValidDigest(s.Pending[0].Digest) {
			t.Fatalf("state %+v: want one pending call with a digest", s.Pending)
		}
		digest = s.Pending[0].Digest
		if want := agent.ArgsDigest(s.Pending[0].Args, s.Pending[0].ArgsRef); digest != want {
			t.Fatalf("digest %s, want %s", digest, want)
		}
		h.env.UpdateWorkflow(operator.SignalApprove, "u1", cb("stale"), jsonPayload(`{"Marker":"`+ticketStep+`","Digest":"`+stale+`"}`))
		h.env.UpdateWorkflow(operator.SignalApprove, "u2", cb("other run"), jsonPayload(`{"Marker":"`+ticketStep+`","Digest":"`+digest+`","Execution":"another-run"}`))
		h.env.UpdateWorkflow(operator.SignalDeny, "u3", cb("bad digest"), jsonPayload(`{"Marker":"`+ticketStep+`","Reason":"no","Digest":"sha256:xyz"}`))
	})
	h.at(2*time.Minute, func() {
		if s := h.state(t); s.Status != agent.StatusAwaitingApproval || len(s.Rejected) != 0 || h.ticketCount(t) != 0 {
			t.Errorf("after refused updates: %s, rejected %+v, %d tickets; want AwaitingApproval, none, 0", s.Status, s.Rejected, h.ticketCount(t))
		}
		h.env.SignalWorkflow(operator.SignalApprove, jsonPayload(`{"Marker":"`+ticketStep+`","Digest":"`+digest+`"}`))
		h.env.SignalWorkflow(operator.SignalApprove, jsonPayload(`{"Marker":"`+ticketStep+`"}`))
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, model calls %d, tickets %d; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}
	want := []string{
		"approve: marker " + ticketStep + " has arguments " + digest + " pending, not " + stale + " as given; look again with reconcile show RUN --step " + ticketStep,
		"approve: execution another-run is not this run's",
		`deny: digest "sha256:xyz" is not an arguments digest; want "sha256:" followed by 16 lowercase hex digits`,
	}
	if len(rejected) != len(want) {
		t.Fatalf("rejected %q, want %d refusals", rejected, len(want))
	}
	for i, w := range want {
		if !strings.Contains(rejected[i], w) || strings.Contains(rejected[i], "\n") {
			t.Errorf("refusal %d: %q, want one line containing %q", i, rejected[i], w)
		}
	}
	if s := h.state(t); len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0].Reason, "already decided") {
		t.Fatalf("rejected %+v, want only the second approval, already decided", s.Rejected)
	}
}
