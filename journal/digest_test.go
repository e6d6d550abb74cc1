package journal_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
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
		sig  journal.Signal
		want string
	}{
		{journal.Signal{Name: journal.SignalApprove, Marker: ticketStep, Digest: stale},
			"approve: marker " + ticketStep + " has arguments " + want + " pending, not " + stale + " as given; look again with reconcile show RUN --step " + ticketStep},
		{journal.Signal{Name: journal.SignalDeny, Marker: ticketStep, Reason: "no", Digest: stale}, "deny: marker " + ticketStep + " has arguments " + want + " pending"},
		{journal.Signal{Name: journal.SignalApprove, Marker: ticketStep, Digest: "sha256:ABC"}, `digest "sha256:ABC" is not an arguments digest; want "sha256:" followed by 16 lowercase hex digits`},
		{journal.Signal{Name: journal.SignalApprove, Marker: ticketStep, Digest: want, Execution: "0b1c"}, `execution "0b1c" names a Temporal run; a local run has none`},
	} {
		err := f.j.Signal(t.Context(), id, c.sig)
		if !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("signal %+v: %v; want one line ErrInvalid containing %q", c.sig, err, c.want)
		}
	}
	if got := len(f.records(t, id)); got != n {
		t.Fatalf("refused decisions wrote %d records", got-n)
	}
	f.signal(t, id, journal.Signal{Name: journal.SignalApprove, Marker: ticketStep, Digest: want})
	if o := f.run(t, id); o.Status != agent.StatusCompleted {
		t.Fatalf("resumed: %+v, want Completed", o)
	}
	if k := f.ticketCount(t); k != 1 {
		t.Fatalf("tickets %d, want 1", k)
	}
}

// FuzzCheckSignal: the journal's operator input checks never panic, and
// whatever they refuse is refused in one line wrapping ErrInvalid. The
// input is a signal record's JSON, as Signal records and decodes it.
func FuzzCheckSignal(f *testing.F) {
	for _, s := range []string{
		`{"Name":"approve","Marker":"tool/2/0/create_ticket"}`,
		`{"Name":"approve","Marker":"tool/2/0/create_ticket","Digest":"sha256:0123456789abcdef"}`,
		`{"Name":"deny","Marker":"tool/2/0/create_ticket","Reason":"no","Digest":"sha256:zz","Execution":"x"}`,
		`{"Name":"reconcile","Step":"tool/2/0/create_ticket","Outcome":"done","Result":"T-1"}`,
		`{"Name":"reconcile","Step":"llm/1","Outcome":"retry","Result":"x"}`,
		`{"Name":"budget","MaxTurns":-1,"MaxTokens":9223372036854775807}`,
		`{"Name":"message","Content":"\u001b[2J hi"}`,
		`{"Name":"approve","Marker":"tool/2/0/create\nticket"}`,
		`{"Name":""}`,
	} {
		f.Add([]byte(s))
	}
	pending := &agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: "tool/2/0/create_ticket", Tool: "create_ticket", Digest: "sha256:0123456789abcdef"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var sig journal.Signal
		if json.Unmarshal(data, &sig) != nil {
			return
		}
		facts := agent.NewFacts()
		facts.Indeterminate["tool/3/0/create_ticket"] = true
		checks := []error{journal.Validate(sig, pending, facts), journal.Validate(sig, nil, facts), journal.CheckBudget(sig), journal.CheckMessage(sig)}
		if strings.HasPrefix(sig.Marker, "tool/") {
			checks = append(checks, journal.CheckDecision(sig))
		}
		if sig.Step != "" {
			checks = append(checks, journal.CheckReconcile(sig))
		}
		for _, err := range checks {
			if err == nil {
				continue
			}
			if !errors.Is(err, journal.ErrInvalid) {
				t.Fatalf("%s: %v does not wrap ErrInvalid", data, err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") && !strings.ContainsAny(sig.Marker+sig.Step+sig.Digest+sig.Execution, "\n") {
				t.Fatalf("%s: the refusal is not one line: %q", data, msg)
			}
		}
		if err := journal.Validate(sig, pending, facts); err == nil && (sig.Name == journal.SignalApprove || sig.Name == journal.SignalDeny) &&
			(sig.Marker != "tool/2/0/create_ticket" || (sig.Digest != "" && sig.Digest != "sha256:0123456789abcdef")) {
			t.Fatalf("%s: accepted a decision on another marker or digest", data)
		}
	})
}
