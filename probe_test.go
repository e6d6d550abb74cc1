package agentrun_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// ledger is a payment provider's refunds, in memory: the world a refund
// tool changes and its probe reads.
type ledger struct {
	mu      sync.Mutex
	refunds map[string][]string // order → refund ids
	calls   int                 // calls of the refund tool
}

type findIn struct {
	Order string `json:"order"`
}

// tools returns a refund write whose first call takes effect and then
// hangs until its timeout passes (a provider that never answers), and
// find_refund, the read that probes it.
func (l *ledger) tools(t *testing.T, timeout time.Duration) (refund, find *agentrun.Tool) {
	t.Helper()
	refund = mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true, Approval: "never", Timeout: timeout,
		Probe: &agentrun.Probe{Tool: "find_refund", Args: map[string]any{"order": "{{args.order}}"}, Found: `^refunded: (R-\S+)`, NotFound: `^no refund`},
	}, func(ctx context.Context, in refundIn) (string, error) {
		l.mu.Lock()
		l.calls++
		first := l.calls == 1
		l.refunds[in.Order] = append(l.refunds[in.Order], "R-"+in.Order)
		l.mu.Unlock()
		if first {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "R-" + in.Order, nil
	})
	find = mustTool(t, agentrun.ToolOptions{Name: "find_refund"}, func(_ context.Context, in findIn) (string, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if ids := l.refunds[in.Order]; len(ids) > 0 {
			return "refunded: " + ids[0], nil
		}
		return "no refund for " + in.Order, nil
	})
	return refund, find
}

// TestGoWriteSettledByProbe: on a real dev server, a Go write's first
// attempt refunds and then outlasts its 1 s timeout; the next attempt asks
// the write's probe (a Go read of the same agent), which finds the refund:
// the run completes with the refund as the call's result, settled by
// probe, with exactly 1 refund in the ledger and the write called once.
func TestGoWriteSettledByProbe(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := &ledger{refunds: map[string][]string{}}
	refund, find := l.tools(t, time.Second)
	if p := refund.Spec().Probe; p == nil || p.Tool != "find_refund" || string(p.Args) != `{"order":"{{args.order}}"}` {
		t.Fatalf("the spec's probe %+v; want the declared one", p)
	}
	model := script(
		llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order":"7","amount_cents":1200}`)}}},
		llm.Turn{Text: "Refunded: " + llm.LastToolResult},
	)
	const queue = "probe-queue"
	w := worker.New(c, queue, worker.Options{})
	err := agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund, find}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "probe-1", TaskQueue: queue}, agentrun.WorkflowName,
		workflows.Input{Messages: agent.UserMessages("refund order 7")})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	refunds, calls := len(l.refunds["7"]), l.calls
	l.mu.Unlock()
	if res.Answer != "Refunded: R-7" || refunds != 1 || calls != 1 {
		t.Fatalf("answer %q, %d refunds, %d calls of the write; want Refunded: R-7, 1 and 1", res.Answer, refunds, calls)
	}
	v, err := c.QueryWorkflow(ctx, "probe-1", "", workflows.QueryState)
	if err != nil {
		t.Fatal(err)
	}
	var st workflows.State
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Settled) != 1 || st.Settled[0].Step != "tool/1/0/refund" || st.Settled[0].Settled.By != agent.SettledByProbe ||
		st.Settled[0].Settled.Probe == nil || st.Settled[0].Settled.Probe.Verdict != agent.ProbeFound {
		t.Fatalf("settled %+v; want tool/1/0/refund settled by probe find_refund, found", st.Settled)
	}
}

// TestProbeRefused: a probe that cannot work is one line naming the tool,
// from NewTool when the tool alone shows it, else from Register (naming
// the agent, the write and its probe's tool, and the read tools valid).
func TestProbeRefused(t *testing.T) {
	t.Parallel()
	good := agentrun.Probe{Tool: "find_refund", Args: map[string]any{"order": "{{args.order}}"}, Found: `^refunded`, NotFound: `^no refund`}
	with := func(f func(p *agentrun.Probe)) *agentrun.Probe {
		p := good
		f(&p)
		return &p
	}
	find := mustTool(t, agentrun.ToolOptions{Name: "find_refund"}, func(context.Context, findIn) (string, error) { return "", nil })
	cancelOrder := mustTool(t, agentrun.ToolOptions{Name: "cancel_order", Write: true}, func(context.Context, findIn) (string, error) { return "", nil })
	write := agentrun.ToolOptions{Name: "refund", Write: true}
	for _, c := range []struct {
		name   string
		opts   agentrun.ToolOptions
		probe  *agentrun.Probe
		others []tools.Tool // the agent's other tools
		want   string       // in the error; NewTool's when newTool
		atNew  bool
	}{
		{"on a read", agentrun.ToolOptions{Name: "refund"}, &good, nil, "tool refund: a probe on a read; only a write takes one", true},
		{"no tool named", write, with(func(p *agentrun.Probe) { p.Tool = "" }), nil, `tool refund: probe: "tool" is missing`, true},
		{"no args", write, with(func(p *agentrun.Probe) { p.Args = nil }), nil, `tool refund: probe: "args" is missing`, true},
		{"args not JSON", write, with(func(p *agentrun.Probe) { p.Args = map[string]any{"order": func() {}} }), nil, "tool refund: probe: args: not JSON", true},
		{"bad found", write, with(func(p *agentrun.Probe) { p.Found = "(" }), nil, `tool refund: probe: found: "(" is not a regular expression`, true},
		{"no not_found", write, with(func(p *agentrun.Probe) { p.NotFound = "" }), nil, `tool refund: probe: "not_found" is missing`, true},
		{"a key it has none of", write, with(func(p *agentrun.Probe) { p.Args = map[string]any{"order": "{{key}}"} }), nil, "{{key}} names the idempotency key, and refund has none", true},
		{"an argument it has none of", write, with(func(p *agentrun.Probe) { p.Args = map[string]any{"order": "{{args.ordr}}"} }), nil, `{{args.ordr}}: "ordr" is not an argument of refund; its arguments are: amount_cents, order, request_id`, true},
		{"a tool the agent lacks", write, with(func(p *agentrun.Probe) { p.Tool = "find_refunds" }), []tools.Tool{find},
			`agent "refunds": the probe of write refund: tool: "find_refunds" is not a tool that is offered; want a read tool: find_refund`, false},
		{"a write", write, with(func(p *agentrun.Probe) { p.Tool = "cancel_order" }), []tools.Tool{find, cancelOrder},
			`agent "refunds": the probe of write refund: tool: "cancel_order" is a write; a probe must not change anything: want a read tool: find_refund`, false},
		{"an argument its tool lacks", write, with(func(p *agentrun.Probe) { p.Args = map[string]any{"id": "{{args.order}}"} }), []tools.Tool{find},
			`the probe of write refund: args: "id" is not an argument of find_refund; its arguments are: order`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := c.opts
			opts.Probe = c.probe
			tool, err := agentrun.NewTool(opts, okRefund(nil))
			if c.atNew {
				oneLine(t, err, c.want)
				return
			}
			if err != nil {
				t.Fatalf("NewTool: %v; want it to leave the probe's tool to Register", err)
			}
			w := &countingRegistry{}
			err = agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Agents: []agentrun.Agent{
				{Name: "refunds", Model: script(llm.Turn{Text: "hi"}), Tools: append([]tools.Tool{tool}, c.others...)}}})
			oneLine(t, err, c.want)
			if w.n != 0 {
				t.Errorf("%d registrations after a refusal", w.n)
			}
		})
	}
}

// oneLine fails t unless err is one line containing want.
func oneLine(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v; want one line containing %q", err, want)
	}
}
