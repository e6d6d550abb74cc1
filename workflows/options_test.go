package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
)

// TestStepOptions: a step's activity options follow from the step and the
// catalog alone: its id (with the write's generation), summary, timeouts
// and retry policy.
func TestStepOptions(t *testing.T) {
	t.Parallel()
	cat := activities.Catalog{Model: "m1", ModelTimeout: 20 * time.Minute,
		Timeouts: map[string]time.Duration{"search": 30 * time.Second, "create_ticket": 2 * time.Minute}}
	call := func(name string) *agent.ToolCall { return &agent.ToolCall{Name: name} }
	key := &agent.Settle{KeyArg: "request_id"}
	probe := &agent.Settle{Probe: &agent.Probe{Tool: "find_ticket"}}
	for _, tc := range []struct {
		name      string
		step      agent.Step
		cat       activities.Catalog
		gen       int
		id        string
		summary   string
		timeout   time.Duration
		attempts  int32
		waitsStop bool
	}{
		{"model", agent.Step{Name: "llm/1", Kind: agent.KindModel}, cat, 0,
			"llm/1", "llm/1 · m1", 21 * time.Minute, 10, false},
		{"model with a short timeout", agent.Step{Name: "llm/2", Kind: agent.KindModel}, activities.Catalog{Model: "m2", ModelTimeout: time.Minute}, 0,
			"llm/2", "llm/2 · m2", StepTimeout, 10, false},
		{"read", agent.Step{Name: "tool/1/0/search", Kind: agent.KindRead, Call: call("search")}, cat, 0,
			"tool/1/0/search", "tool/1/0/search · read", 90 * time.Second, 10, false},
		{"read without a timeout", agent.Step{Name: "tool/1/0/lookup", Kind: agent.KindRead, Call: call("lookup")}, cat, 0,
			"tool/1/0/lookup", "tool/1/0/lookup · read", StepTimeout, 10, false},
		{"idempotent write", agent.Step{Name: "tool/1/0/create_ticket", Kind: agent.KindWrite, Idempotent: true, Call: call("create_ticket")}, cat, 0,
			"tool/1/0/create_ticket", "tool/1/0/create_ticket · write", 3 * time.Minute, 10, false},
		{"write", agent.Step{Name: "tool/2/0/create_ticket", Kind: agent.KindWrite, Call: call("create_ticket")}, cat, 1,
			"tool/2/0/create_ticket", "tool/2/0/create_ticket · write", activities.WriteStartToClose(2 * time.Minute), 3, true},
		{"write retried by a person", agent.Step{Name: "tool/2/0/create_ticket", Kind: agent.KindWrite, Call: call("create_ticket")}, cat, 2,
			"tool/2/0/create_ticket#2", "tool/2/0/create_ticket · write", activities.WriteStartToClose(2 * time.Minute), 3, true},
		{"write with a key", agent.Step{Name: "tool/2/0/create_ticket", Kind: agent.KindWrite, Call: call("create_ticket"), Settle: key}, cat, 1,
			"tool/2/0/create_ticket", "tool/2/0/create_ticket · write · settles by key request_id", activities.WriteStartToClose(2 * time.Minute), 10, true},
		{"write with a probe, no timeout", agent.Step{Name: "tool/2/0/send", Kind: agent.KindWrite, Call: call("send"), Settle: probe}, cat, 3,
			"tool/2/0/send#3", "tool/2/0/send · write · settles by probe find_ticket", StepTimeout, 3, true},
	} {
		o := stepOptions(tc.step, tc.cat, tc.gen)
		p := o.RetryPolicy
		switch {
		case o.ActivityID != tc.id || o.Summary != tc.summary:
			t.Errorf("%s: id %q, summary %q; want %q, %q", tc.name, o.ActivityID, o.Summary, tc.id, tc.summary)
		case o.StartToCloseTimeout != tc.timeout || o.HeartbeatTimeout != HeartbeatTimeout:
			t.Errorf("%s: start-to-close %s, heartbeat %s; want %s, %s", tc.name, o.StartToCloseTimeout, o.HeartbeatTimeout, tc.timeout, HeartbeatTimeout)
		case p == nil || p.MaximumAttempts != tc.attempts || len(p.NonRetryableErrorTypes) > 0:
			// The activities make their final failures non-retryable
			// (TestFinalFailuresAreNonRetryable in package activities).
			t.Errorf("%s: retry policy %+v; want %d attempts and no error types listed", tc.name, p, tc.attempts)
		case p.InitialInterval != time.Second || p.BackoffCoefficient != 2 || p.MaximumInterval != time.Minute:
			t.Errorf("%s: backoff %+v; want 1s doubling to 1m", tc.name, p)
		case o.WaitForCancellation != tc.waitsStop:
			t.Errorf("%s: wait for cancellation %v, want %v", tc.name, o.WaitForCancellation, tc.waitsStop)
		}
	}
}

// TestToolsOptions: the tool list's activity keeps the server's backoff
// and 10 attempts of a minute.
func TestToolsOptions(t *testing.T) {
	t.Parallel()
	o := toolsOptions()
	if o.ActivityID != "tools" || o.Summary != "tools · list" || o.StartToCloseTimeout != time.Minute || o.HeartbeatTimeout != HeartbeatTimeout ||
		o.RetryPolicy == nil || o.RetryPolicy.MaximumAttempts != 10 || o.RetryPolicy.InitialInterval != 0 {
		t.Fatalf("tools options %+v, retry %+v", o, o.RetryPolicy)
	}
}

// TestStepInputRunKey: only a write's input names the run (its guard
// record and idempotency key use it); a model step's and a read's carry no
// run key, whose 60 bytes would be in every history event scheduling them.
func TestStepInputRunKey(t *testing.T) {
	t.Parallel()
	const key = "0190c6f0-0000-7000-8000-000000000001"
	call := &agent.ToolCall{ID: "c", Name: "lookup"}
	for _, tc := range []struct {
		step agent.Step
		want string
	}{
		{agent.Step{Name: "llm/1", Kind: agent.KindModel, Model: &agent.ModelInput{}}, ""},
		{agent.Step{Name: "tool/1/0/lookup", Kind: agent.KindRead, Call: call}, ""},
		{agent.Step{Name: "tool/1/0/create_ticket", Kind: agent.KindWrite, Call: call}, key},
		{agent.Step{Name: "tool/1/0/put", Kind: agent.KindWrite, Idempotent: true, Call: call}, key},
	} {
		in := stepInput(tc.step, key)
		if in.RunKey != tc.want || in.Step.Name != tc.step.Name {
			t.Errorf("%s: input %+v, want run key %q", tc.step.Name, in, tc.want)
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"run_key"`); has != (tc.want != "") {
			t.Errorf("%s: encoded %s; run_key present %v, want %v", tc.step.Name, b, has, tc.want != "")
		}
	}
}
