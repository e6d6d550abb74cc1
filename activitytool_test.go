package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/tools"
)

// payments is a team's payment activities: IssueRefund files a refund in
// its ledger, unless the order says otherwise ("declined": an ordinary
// error; "lost": the refund is filed and the answer lost).
type payments struct {
	mu     sync.Mutex
	ledger []string
	inputs []refundIn
}

func (p *payments) IssueRefund(ctx context.Context, in refundIn) (refundOut, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inputs = append(p.inputs, in)
	if in.Order == "declined" {
		return refundOut{}, errors.New("card declined")
	}
	id := fmt.Sprintf("R-%s-%d", in.Order, in.Amount)
	p.ledger = append(p.ledger, id)
	if in.Order == "lost" {
		return refundOut{}, agentrun.OutcomeUnknown(errors.New("the gateway's answer was lost"))
	}
	return refundOut{Refund: id}, nil
}

func (p *payments) counts() (refunds, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ledger), len(p.inputs)
}

// refundActivityTool is the team's IssueRefund as the tool "refund" on
// the queue "payments-"+suffix, with no approval.
func refundActivityTool(t *testing.T, p *payments, queue string) *agentrun.Tool {
	t.Helper()
	tool, err := agentrun.ActivityTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true, Approval: "never"},
		p.IssueRefund, agentrun.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestActivityTool: a team's activity as a tool runs as that activity, on
// its own queue and worker, with its typed input; arguments that do not
// fit its input are answered without scheduling it; an ordinary error is
// read by the model; an outcome-unknown error makes the write
// Indeterminate, settled through the client: one refund each time.
func TestActivityTool(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p := &payments{}
	const agentQueue, payQueue = "activity-tool-agents", "activity-tool-payments"
	pay := worker.New(c, payQueue, worker.Options{})
	pay.RegisterActivity(p)
	if err := pay.Start(); err != nil {
		t.Fatal(err)
	}
	defer pay.Stop()

	// One agent per case: a scripted model answers by the turn of its run.
	tool := refundActivityTool(t, p, payQueue)
	refunder := func(name, args string) agentrun.Agent {
		return agentrun.Agent{Name: name, Model: refundTurns(args), Tools: []tools.Tool{tool}}
	}
	ac := agentWorker(t, c, agentQueue,
		refunder("ok", `{"order":"7","amount_cents":1200}`),
		refunder("misfit", `{"order":7}`), // not the tool's input
		refunder("declined", `{"order":"declined","amount_cents":500}`),
		refunder("lost", `{"order":"lost","amount_cents":900}`),
	)
	run := func(id string) *agentrun.Run {
		r, err := ac.Start(ctx, agentrun.StartOptions{ID: "activity-tool-" + id, Agent: id, Prompt: "refund it"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	wait := func(r *agentrun.Run, want string) {
		t.Helper()
		res, err := r.Wait(ctx)
		if err != nil || res.Answer != want {
			t.Fatalf("run %s: %q, %v; want %q", r.ID(), res.Answer, err, want)
		}
	}

	r1 := run("ok")
	// Its stream, followed from its start, tells each step and how the
	// run ended.
	var told []string
	for u, err := range r1.Subscribe(ctx, agentrun.SubscribeOptions{}) {
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		if e := u.Event; e != nil && (e.Type == progress.EventStepCompleted || e.Type == progress.EventStatus) {
			told = append(told, strings.TrimSpace(e.Step+" "+string(e.Status)))
		}
	}
	if got, want := strings.Join(told, ", "), "llm/1, tool/1/0/refund, llm/2, Completed"; !strings.HasSuffix(got, want) {
		t.Fatalf("the stream told %q; want it to end with %q", got, want)
	}
	wait(r1, `Refunded: {"refund":"R-7-1200"}`)
	if refunds, calls := p.counts(); refunds != 1 || calls != 1 || p.inputs[0] != (refundIn{Order: "7", Amount: 1200}) {
		t.Fatalf("after run 1: %d refunds, %d calls (%+v); want 1 and 1 with the typed input", refunds, calls, p.inputs)
	}
	// The history shows the team's activity on the team's queue.
	scheduled := scheduledActivities(ctx, t, c, r1.ID())
	if got := scheduled["IssueRefund"]; got != payQueue {
		t.Fatalf("run 1 scheduled %v; want IssueRefund on %s", scheduled, payQueue)
	}
	if _, ok := scheduled["agentrun.CallTool"]; ok {
		t.Fatalf("run 1 scheduled %v; an activity tool's call runs no CallTool", scheduled)
	}

	wait(run("misfit"), "Not refunded: invalid arguments for refund: "+validationOf(t, `{"order":7}`))
	wait(run("declined"), "Not refunded: card declined")
	if refunds, calls := p.counts(); refunds != 1 || calls != 2 {
		t.Fatalf("after runs 2 and 3: %d refunds, %d calls; want 1 and 2 (run 2's call was never scheduled)", refunds, calls)
	}

	r4 := run("lost")
	waitStatus(ctx, t, c, r4.ID(), agentrun.StatusIndeterminate)
	st, err := r4.State(ctx)
	if err != nil || st.Indeterminate != "tool/1/0/refund" {
		t.Fatalf("run 4: indeterminate %q, %v; want tool/1/0/refund", st.Indeterminate, err)
	}
	if _, err := r4.Done(ctx, st.Indeterminate, "R-lost-900"); err != nil {
		t.Fatal(err)
	}
	wait(r4, "Refunded: R-lost-900")
	if refunds, calls := p.counts(); refunds != 2 || calls != 3 {
		t.Fatalf("after run 4: %d refunds, %d calls; want 2 and 3 (its one call, never run again)", refunds, calls)
	}
}

// refundTurns is a model that calls refund with args and answers with
// its result.
func refundTurns(args string) *llm.Scripted {
	return script(
		llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(args)}}},
		llm.Turn{Text: "Refunded: " + llm.LastToolResult, TextOnError: "Not refunded: " + llm.LastToolResult},
	)
}

// agentWorker starts a worker of queue running agents and returns a
// client of its runs.
func agentWorker(t *testing.T, c client.Client, queue string, agents ...agentrun.Agent) *agentrun.Client {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	err := agentrun.Register(w, agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ac, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// validationOf is what the tool's schema check says of args.
func validationOf(t *testing.T, args string) string {
	t.Helper()
	tool, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund"}, func(context.Context, refundIn) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Call(context.Background(), json.RawMessage(args))
	if err != nil || !res.IsError {
		t.Fatalf("the schema check of %s: %+v, %v", args, res, err)
	}
	return strings.TrimPrefix(res.Content, "invalid arguments for refund: ")
}

// scheduledActivities returns the activity types a run scheduled, each
// with the task queue it was scheduled on.
func scheduledActivities(ctx context.Context, t *testing.T, c client.Client, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			out[a.GetActivityType().GetName()] = a.GetTaskQueue().GetName()
		}
	}
	return out
}

func init() {
	// A payments worker process for the kill and freeze tests
	// (activitytool_kill_test.go) runs as this test binary.
	if os.Getenv(paymentsWorkerEnv) != "" {
		runPaymentsWorker()
	}
}

// TestActivityToolRefused: options an activity tool cannot take are one
// line naming the tool and what is valid.
func TestActivityToolRefused(t *testing.T) {
	t.Parallel()
	p := &payments{}
	write := agentrun.ToolOptions{Name: "refund", Write: true}
	for _, tc := range []struct {
		name string
		opts agentrun.ToolOptions
		fn   func(context.Context, refundIn) (refundOut, error)
		ao   agentrun.ActivityOptions
		want string
	}{
		{"tool timeout", agentrun.ToolOptions{Name: "refund", Write: true, Timeout: time.Second}, p.IssueRefund, agentrun.ActivityOptions{}, "leave ToolOptions.Timeout 0"},
		{"literal", write, func(context.Context, refundIn) (refundOut, error) { return refundOut{}, nil }, agentrun.ActivityOptions{}, "set ActivityOptions.Name"},
		{"retried write", write, p.IssueRefund, agentrun.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}}, "allows 3 attempts; set MaximumAttempts 1"},
		{"unbounded write", write, p.IssueRefund, agentrun.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{}}, "allows any number of attempts"},
		{"backoff", agentrun.ToolOptions{Name: "lookup"}, p.IssueRefund, agentrun.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{BackoffCoefficient: 0.5}}, "BackoffCoefficient 0.5; want at least 1"},
		{"negative", write, p.IssueRefund, agentrun.ActivityOptions{HeartbeatTimeout: -time.Second}, "a negative timeout"},
		{"probe", agentrun.ToolOptions{Name: "refund", Write: true, Probe: &agentrun.Probe{Tool: "find", Found: "x", NotFound: "y"}}, p.IssueRefund, agentrun.ActivityOptions{}, "takes no probe"},
	} {
		_, err := agentrun.ActivityTool(tc.opts, tc.fn, tc.ao)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "tool "+tc.opts.Name+":") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line naming the tool and containing %q", tc.name, err, tc.want)
		}
	}
	// A keyed write may be retried, and a literal may be named.
	keyed := agentrun.ToolOptions{Name: "refund", Write: true, IdempotencyKey: "request_id"}
	if _, err := agentrun.ActivityTool(keyed, p.IssueRefund, agentrun.ActivityOptions{RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5}}); err != nil {
		t.Errorf("a keyed write with retries: %v", err)
	}
	tool, err := agentrun.ActivityTool(write, func(context.Context, refundIn) (refundOut, error) { return refundOut{}, nil }, agentrun.ActivityOptions{Name: "IssueRefund"})
	if err != nil || tool.Spec().Activity.Name != "IssueRefund" || tool.Spec().Activity.StartToClose != 2*time.Minute {
		t.Errorf("a named literal: %+v, %v; want IssueRefund with the default two minutes", tool, err)
	}
	if tool, _ := agentrun.ActivityTool(write, p.IssueRefund, agentrun.ActivityOptions{}); tool.Spec().Activity.Name != "IssueRefund" {
		t.Errorf("a method value's activity name: %q, want IssueRefund", tool.Spec().Activity.Name)
	}
}
