package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/local"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/tools"
)

// crashing fails a step once, before it runs or after it ran: a process
// that died inside it.
type crashing struct {
	*counting
	before bool
}

func (c *crashing) Execute(ctx context.Context, s agent.Step) (json.RawMessage, error) {
	if c.before && c.crashAfter == s.Name {
		c.mu.Lock()
		c.calls[s.Name]++
		c.crashAfter = ""
		c.mu.Unlock()
		return nil, errors.New("simulated crash before the step took effect")
	}
	return c.counting.Execute(ctx, s)
}

// settleFixture is the hand example with create_ticket declared as
// override says, and a journal that asks probes.
func settleFixture(t *testing.T, override tools.Override) (*fixture, *atomic.Int32) {
	t.Helper()
	dir := t.TempDir()
	store, err := journal.NewFileStore(filepath.Join(dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "tickets.jsonl")
	set, err := tools.Open(t.Context(), tools.Config{Tools: map[string]tools.Override{"create_ticket": override}}, tools.DemoConfig{Tickets: tickets})
	if err != nil {
		t.Fatal(err)
	}
	exec := &execute.Executor{Model: llm.NewScripted(llm.HandExample()), Tools: set, Content: content.NewMemStore()}
	probes := &atomic.Int32{}
	j := &local.Engine{Store: store, Loop: agent.Loop{Tools: set.Specs()},
		Probe: func(ctx context.Context, s agent.Step) (agent.ProbeAnswer, error) {
			probes.Add(1)
			return exec.Probe(ctx, s)
		}}
	return &fixture{j: j, exec: &counting{inner: exec, calls: map[string]int{}}, tickets: tickets}, probes
}

func probe(args, found, notFound string) *agent.Probe {
	return &agent.Probe{Tool: "find_ticket", Args: json.RawMessage(args), Found: found, NotFound: notFound}
}

func key(name string) *string { return &name }

// TestSettleInterruptedWrite: a write that was interrupted before or after
// its effect is settled by its probe or its key, or waits for a person when
// the probe cannot tell, exactly as the decision table of RunStep says.
func TestSettleInterruptedWrite(t *testing.T) {
	t.Parallel()
	byKey := probe(`{"request_id": "{{key}}"}`, `^(TICKET-[0-9]+):`, `^no ticket`)
	byTitle := probe(`{"title": "{{args.title}}"}`, `^(TICKET-[0-9]+):`, `^no ticket`)
	unclear := probe(`{"title": "{{args.title}}"}`, `^NEVER$`, `^NOPE$`)
	failing := probe(`{"title": "{{args.title}}", "request_id": "x"}`, `^(TICKET-[0-9]+):`, `^no ticket`) // find_ticket refuses both
	for _, c := range []struct {
		name     string
		override tools.Override
		before   bool // the crash comes before the effect
		// want
		runs    int    // create_ticket executions
		tickets int    // tickets filed
		by      string // Settled.By; "" for Indeterminate
		verdict string // the probe's verdict, if asked
		probes  int32
	}{
		{"probe by key, crash after the effect", tools.Override{IdempotencyKey: key("request_id"), Probe: byKey}, false, 1, 1, agent.SettledByProbe, agent.ProbeFound, 1},
		{"probe by title, crash after the effect", tools.Override{Probe: byTitle}, false, 1, 1, agent.SettledByProbe, agent.ProbeFound, 1},
		{"probe by title, crash before the effect", tools.Override{Probe: byTitle}, true, 2, 1, agent.SettledByProbe, agent.ProbeNotFound, 1},
		{"key only, crash after the effect", tools.Override{IdempotencyKey: key("request_id")}, false, 2, 1, agent.SettledByKey, "", 0},
		{"key and an unclear probe", tools.Override{IdempotencyKey: key("request_id"), Probe: unclear}, false, 2, 1, agent.SettledByKey, agent.ProbeUnknown, 1},
		{"unclear probe", tools.Override{Probe: unclear}, false, 1, 1, "", agent.ProbeUnknown, 1},
		{"failing probe", tools.Override{Probe: failing}, false, 1, 1, "", agent.ProbeUnknown, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, probes := settleFixture(t, c.override)
			const run = "settle"
			if o := f.run(t, run); o.Status != agent.StatusAwaitingApproval {
				t.Fatalf("first run: %+v, want AwaitingApproval", o)
			}
			f.signal(t, run, operator.Signal{Name: operator.SignalApprove, Marker: ticketStep})
			f.exec.crashAfter = ticketStep
			if _, err := f.j.Drive(t.Context(), run, agent.UserMessages(prompt), &crashing{counting: f.exec, before: c.before}); err == nil {
				t.Fatal("the crashed run returned no error")
			}
			o := f.run(t, run)
			if n := probes.Load(); n != c.probes {
				t.Fatalf("probes asked: %d, want %d", n, c.probes)
			}
			if c.by == "" {
				if o.Status != agent.StatusIndeterminate || o.Step != ticketStep {
					t.Fatalf("after the crash: %+v, want Indeterminate at %s", o, ticketStep)
				}
				info, err := f.j.Show(run)
				if err != nil || info.Status != agent.StatusIndeterminate {
					t.Fatalf("show: %+v, %v; want Indeterminate", info, err)
				}
				if got := info.Probe; got == nil || got.Verdict != agent.ProbeUnknown || got.Answer == "" {
					t.Fatalf("show's probe answer: %+v, want unknown with the answer", got)
				}
				if o := f.run(t, run); o.Status != agent.StatusIndeterminate || probes.Load() != c.probes {
					t.Fatalf("resumed: %+v after %d probes; want Indeterminate without asking again", o, probes.Load())
				}
				f.signal(t, run, operator.Signal{Name: operator.SignalReconcile, Step: ticketStep, Outcome: operator.OutcomeDone, Result: "TICKET-1"})
				o = f.run(t, run)
			}
			if o.Status != agent.StatusCompleted || !strings.Contains(o.Answer, "TICKET-1") {
				t.Fatalf("outcome %+v, want Completed naming TICKET-1", o)
			}
			if n := f.exec.count(ticketStep); n != c.runs {
				t.Fatalf("create_ticket executions: %d, want %d", n, c.runs)
			}
			if n := f.ticketCount(t); n != c.tickets {
				t.Fatalf("tickets: %d, want %d", n, c.tickets)
			}
			if n := f.exec.count("llm/"); n != 3 {
				t.Fatalf("model calls: %d, want 3", n)
			}
			_, res, err := f.j.Step(run, ticketStep)
			if err != nil {
				t.Fatal(err)
			}
			got := agent.SettledOf(res)
			if c.by == "" {
				if got != nil {
					t.Fatalf("a person's result carries %+v, want no settled note", got)
				}
				return
			}
			switch {
			case got == nil:
				t.Fatalf("result %s carries no settled note", res)
			case got.By != c.by:
				t.Fatalf("settled by %q, want %q (%s)", got.By, c.by, got)
			case c.verdict == "" && got.Probe != nil:
				t.Fatalf("settled %s: a probe answer without a probe", got)
			case c.verdict != "" && (got.Probe == nil || got.Probe.Verdict != c.verdict):
				t.Fatalf("settled %s, want the probe's verdict %s", got, c.verdict)
			case got.Runs != c.runs:
				t.Fatalf("settled %s: runs %d, want %d", got, got.Runs, c.runs)
			}
			if c.override.IdempotencyKey != nil {
				ts, _ := tools.ReadTickets(f.tickets)
				if len(ts) != 1 || ts[0].RequestID != got.Key || !strings.HasPrefix(got.Key, "agentrun-") {
					t.Fatalf("tickets %+v, settled key %q: want one ticket filed under the key", ts, got.Key)
				}
			}
		})
	}
}
