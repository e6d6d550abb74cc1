package local_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
)

// TestApproveByDigest: a call with 2 KiB arguments (kept by reference)
// waits with the digest of those bytes; an approval naming another
// digest, a malformed one or an execution is refused in one line naming
// both digests and writes nothing; one naming the pending digest is
// recorded, and the resumed run files exactly one ticket.
func TestApproveByDigest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := strings.Repeat("b", 2048)
	args, _ := json.Marshal(map[string]string{"title": "big", "body": body})
	script := llm.HandExample()
	script.Turns[1].ToolCalls[0].Args = args
	f.exec.inner.(*execute.Executor).Model = llm.NewScripted(script)
	const id = "digest"
	o := f.run(t, id)
	if o.Status != agent.StatusAwaitingApproval || len(o.Pending) != 1 {
		t.Fatalf("run: %+v, want one call awaiting approval", o)
	}
	p := o.Pending[0]
	want := agent.ArgsDigest(args, nil)
	if p.ArgsRef == nil || p.Digest != want {
		t.Fatalf("pending %+v: want arguments by reference with digest %s", p, want)
	}
	info, err := f.j.Show(id)
	if err != nil || len(info.Pending) != 1 || info.Pending[0].Digest != want {
		t.Fatalf("Show: %+v, %v; want the pending digest %s", info.Pending, err, want)
	}
	n := len(f.records(t, id))
	stale := "sha256:0000000000000000"
	for _, c := range []struct {
		sig  operator.Signal
		want string
	}{
		{operator.Signal{Name: operator.SignalApprove, Marker: ticketStep, Digest: stale},
			"approve: marker " + ticketStep + " has arguments " + want + " pending, not " + stale + " as given; look again with reconcile show RUN --step " + ticketStep},
		{operator.Signal{Name: operator.SignalDeny, Marker: ticketStep, Reason: "no", Digest: stale}, "deny: marker " + ticketStep + " has arguments " + want + " pending"},
		{operator.Signal{Name: operator.SignalApprove, Marker: ticketStep, Digest: "sha256:ABC"}, `digest "sha256:ABC" is not an arguments digest; want "sha256:" followed by 16 lowercase hex digits`},
		{operator.Signal{Name: operator.SignalApprove, Marker: ticketStep, Digest: want, Execution: "0b1c"}, `execution "0b1c" names a Temporal run; a local run has none`},
	} {
		err := f.j.Signal(t.Context(), id, c.sig)
		if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("signal %+v: %v; want one line operator.ErrInvalid containing %q", c.sig, err, c.want)
		}
	}
	if got := len(f.records(t, id)); got != n {
		t.Fatalf("refused decisions wrote %d records", got-n)
	}
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep, Digest: want})
	if o := f.run(t, id); o.Status != agent.StatusCompleted {
		t.Fatalf("resumed: %+v, want Completed", o)
	}
	if k := f.ticketCount(t); k != 1 {
		t.Fatalf("tickets %d, want 1", k)
	}
}
