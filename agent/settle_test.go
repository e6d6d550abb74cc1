package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	k := agent.IdempotencyKey("run-1", hand.TicketStep, 1)
	if len(k) != len("agentrun-")+32 || !strings.HasPrefix(k, "agentrun-") {
		t.Fatalf("key %q: want agentrun- and 32 hex digits", k)
	}
	if k != agent.IdempotencyKey("run-1", hand.TicketStep, 1) || k != agent.IdempotencyKey("run-1", hand.TicketStep, 0) {
		t.Fatal("the key is not stable (generation 0 is 1)")
	}
	for _, other := range []string{
		agent.IdempotencyKey("run-2", hand.TicketStep, 1),
		agent.IdempotencyKey("run-1", "tool/3/0/create_ticket", 1),
		agent.IdempotencyKey("run-1", hand.TicketStep, 2),
	} {
		if other == k {
			t.Fatalf("another run, step or generation has the same key %s", k)
		}
	}
}

func TestProbeRenderArgs(t *testing.T) {
	t.Parallel()
	write := json.RawMessage(`{"title": "VPN", "n": 3, "entities": [{"name": "Ada", "tags": ["x"]}], "request_id": "K"}`)
	for _, c := range []struct{ args, want, err string }{
		{`{"request_id": "{{key}}"}`, `{"request_id":"agentrun-1"}`, ""},
		{`{"title": "{{args.title}}", "n": "{{ args.n }}"}`, `{"n":3,"title":"VPN"}`, ""},
		{`{"names": ["{{args.entities.0.name}}"]}`, `{"names":["Ada"]}`, ""},
		{`{"q": "title {{args.title}} #{{args.n}} by {{key}}"}`, `{"q":"title VPN #3 by agentrun-1"}`, ""},
		{`{"tags": "{{args.entities.0.tags}}"}`, `{"tags":["x"]}`, ""},
		{`{"x": "{{args.body}}"}`, "", "the write's arguments have no body"},
		{`{"x": "{{args.entities.5.name}}"}`, "", "the write's arguments have no entities.5.name"},
	} {
		p := agent.Probe{Tool: "find", Args: json.RawMessage(c.args)}
		got, err := p.RenderArgs(write, "agentrun-1")
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: %s, %v; want error %q", c.args, got, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.args, got, err, c.want)
		}
	}
}

func TestProbeTemplates(t *testing.T) {
	t.Parallel()
	ts, err := agent.Probe{Args: json.RawMessage(`{"a": "{{key}}", "b": ["{{args.x.0.y}}"]}`)}.Templates()
	if err != nil || len(ts) != 2 {
		t.Fatalf("templates %+v, %v; want 2", ts, err)
	}
	for _, bad := range []string{`{"a": "{{keys}}"}`, `{"a": "{{args.}}"}`, `{"a": "{{args..x}}"}`, `{"a": "{{}}"}`} {
		if _, err := (agent.Probe{Args: json.RawMessage(bad)}).Templates(); err == nil || !strings.Contains(err.Error(), "names an unknown field") {
			t.Errorf("%s: %v; want an unknown-field error", bad, err)
		}
	}
}

func TestFillKey(t *testing.T) {
	t.Parallel()
	got, err := agent.FillKey(json.RawMessage(`{"title": "a", "request_id": "the model's"}`), "request_id", "agentrun-1")
	if err != nil || string(got) != `{"request_id":"agentrun-1","title":"a"}` {
		t.Fatalf("FillKey: %s, %v; want the engine's key in place of the model's", got, err)
	}
	if _, err := agent.FillKey(json.RawMessage(`[1]`), "request_id", "k"); err == nil {
		t.Fatal("FillKey of an array: no error")
	}
}

func TestSettledString(t *testing.T) {
	t.Parallel()
	found := agent.Settled{By: agent.SettledByProbe, Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeFound, Answer: "TICKET-1: a"}, Runs: 1}
	if got, want := found.String(), "settled by probe find_ticket: found, not run again (answer: TICKET-1: a); runs: 1"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	key := agent.Settled{By: agent.SettledByKey, Key: "agentrun-1", Runs: 2}
	if got, want := key.String(), "made safe by key: ran again with the same key [key agentrun-1]; runs: 2"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
