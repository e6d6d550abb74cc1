package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/examples/refund"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// countModel counts its calls.
type countModel struct {
	agentrun.Model
	calls atomic.Int32
}

func (m *countModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	m.calls.Add(1)
	return m.Model.Complete(ctx, req)
}

// largeScript refunds order A-1001 (4999 cents) in full, as the example's
// script does before its email.
func largeScript() llm.Script {
	return llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "order", Args: json.RawMessage(`{"order_id":"A-1001"}`)}}},
		{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order_id":"A-1001","amount_cents":4999,"reason":"arrived broken"}`)}}},
		{Text: "Order A-1001 is refunded in full: " + llm.LastToolResult + ".", TextOnError: "Nothing was refunded: " + llm.LastToolResult + "."},
	}}
}

// smallScript refunds order A-1002 (1250 cents) in full.
func smallScript() llm.Script {
	return llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "order", Args: json.RawMessage(`{"order_id":"A-1002"}`)}}},
		{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order_id":"A-1002","amount_cents":1250,"reason":"late"}`)}}},
		{Text: "Order A-1002 is refunded: " + llm.LastToolResult + ".", TextOnError: "Nothing was refunded: " + llm.LastToolResult + "."},
	}}
}

// refundDesk is the refunds agent of examples/refund on the local engine,
// with the example's rule (refund.Rule: up to $20 goes through):
// "refunds" plays largeScript (a $49.99 refund), "small-refunds"
// smallScript.
func refundDesk(t *testing.T, dir string) (*agentrun.Local, *refund.Payments, *countModel, *countModel) {
	t.Helper()
	payments := refund.NewPayments(refund.SampleOrders()...)
	ts, err := refund.Tools(payments)
	if err != nil {
		t.Fatal(err)
	}
	large, small := &countModel{Model: llm.NewScripted(largeScript())}, &countModel{Model: llm.NewScripted(smallScript())}
	l, err := agentrun.NewLocal(agentrun.Config{Journal: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: []agentrun.Agent{
		{Name: refund.AgentName, Model: large, System: refund.System, Tools: ts, Approve: refund.Rule},
		{Name: "small-refunds", Model: small, System: refund.System, Tools: ts, Approve: refund.Rule},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return l, payments, large, small
}

// TestLocalRefunds runs the refunds agent on the local engine: the small
// refund passes the approval rule and completes at Start; the large one
// waits, is approved through Pending's typed arguments, and completes on
// Resume; exactly one refund each, and the journals are where the
// programs keep them.
func TestLocalRefunds(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	l, payments, large, small := refundDesk(t, dir)

	run, err := l.Start(ctx, agentrun.StartOptions{ID: "small-1", Agent: "small-refunds", Prompt: "Order A-1002 came late; refund it."})
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.State(ctx)
	if err != nil || st.Status != agentrun.StatusCompleted || !strings.Contains(st.Answer, `"refund_id":"RF-0001"`) {
		t.Fatalf("the small refund: %+v, %v; want Completed with RF-0001, no approval", st, err)
	}
	if n := payments.Refunds(); n != 1 {
		t.Fatalf("%d refunds after the small one; want 1", n)
	}
	if st.StepCount != 5 || st.Turns != 3 {
		t.Errorf("the small run: %d steps, %d model calls; want 5 and 3", st.StepCount, st.Turns)
	}

	run, err = l.Start(ctx, agentrun.StartOptions{ID: "large-1", Prompt: "Order A-1001 arrived broken; please refund it."})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Resume(ctx)
	if err != nil || res.Status != agentrun.StatusAwaitingApproval {
		t.Fatalf("the large refund: %+v, %v; want it AwaitingApproval", res, err)
	}
	calls, err := run.Pending(ctx)
	if err != nil || len(calls) != 1 {
		t.Fatalf("pending %+v, %v; want the refund", calls, err)
	}
	var args refund.RefundInput
	if err := calls[0].Args(&args); err != nil {
		t.Fatal(err)
	}
	if want := (refund.RefundInput{OrderID: "A-1001", AmountCents: 4999, Reason: "arrived broken"}); args != want || calls[0].Marker != "tool/2/0/refund" || calls[0].Digest == "" {
		t.Fatalf("pending %s %+v digest %q; want tool/2/0/refund %+v with its digest", calls[0].Marker, args, calls[0].Digest, want)
	}
	if n := payments.Refunds(); n != 1 {
		t.Fatalf("%d refunds before the approval; want 1 (the small one)", n)
	}
	ans, err := run.Approve(ctx, calls[0].Marker, calls[0].Digest)
	if err != nil || ans.Digest != calls[0].Digest {
		t.Fatalf("approve: %+v, %v", ans, err)
	}
	res, err = run.Resume(ctx)
	if err != nil || res.Status != agentrun.StatusCompleted || !strings.Contains(res.Answer, `"refund_id":"RF-0002"`) {
		t.Fatalf("after the approval: %+v, %v; want Completed with RF-0002", res, err)
	}
	if res.Steps != 5 {
		t.Errorf("result %+v; want 5 steps (3 model calls, the order, the refund)", res)
	}
	// Driven again, it is as it ended: nothing runs twice.
	if again, err := l.Run("large-1").Wait(ctx); err != nil || again.Answer != res.Answer {
		t.Fatalf("Wait on the completed run: %+v, %v; want its answer", again, err)
	}
	if n := payments.Refunds(); n != 2 {
		t.Fatalf("%d refunds; want 2, one each", n)
	}
	if a, b := large.calls.Load(), small.calls.Load(); a != 3 || b != 3 {
		t.Errorf("model calls: %d and %d; want 3 each", a, b)
	}
	// The programs' layout: one journal per run in the folder itself.
	store, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := store.List(); err != nil || !slices.Equal(ids, []string{"large-1", "small-1"}) {
		t.Errorf("journals in %s: %v, %v; want large-1 and small-1", dir, ids, err)
	}
}

// TestLocalWait: Wait follows a run that waits for approval, as on
// Temporal, and goes on when a person approves it from elsewhere.
func TestLocalWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	l, payments, _, _ := refundDesk(t, dir)
	run, err := l.Start(ctx, agentrun.StartOptions{ID: "large-1", Prompt: "Order A-1001 arrived broken; please refund it."})
	if err != nil {
		t.Fatal(err)
	}
	type waited struct {
		res agentrun.Result
		err error
	}
	done := make(chan waited, 1)
	go func() {
		res, err := run.Wait(ctx)
		done <- waited{res, err}
	}()
	// One driver at a time: once Wait follows the run, Resume is refused.
	store, err := journal.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if h, err := store.Holder(ctx, "large-1"); err == nil && h != nil && h.Follows {
			break
		}
		select {
		case w := <-done:
			t.Fatalf("Wait returned before the approval: %+v, %v", w.res, w.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	var busy *journal.BusyError
	if res, err := l.Run("large-1").Resume(ctx); !errors.As(err, &busy) {
		t.Fatalf("Resume while Wait drives the run: %+v, %v; want a *journal.BusyError", res, err)
	}
	// The approval goes through another handle, as another process's would.
	var op agentrun.Operator = l.Run("large-1")
	calls, err := op.Pending(ctx)
	if err != nil || len(calls) != 1 {
		t.Fatalf("pending %+v, %v", calls, err)
	}
	if _, err := op.Approve(ctx, calls[0].Marker, calls[0].Digest); err != nil {
		t.Fatal(err)
	}
	w := <-done
	if w.err != nil || w.res.Status != agentrun.StatusCompleted || !strings.Contains(w.res.Answer, "RF-0001") {
		t.Fatalf("Wait: %+v, %v; want Completed with RF-0001", w.res, w.err)
	}
	if n := payments.Refunds(); n != 1 {
		t.Fatalf("%d refunds; want 1", n)
	}
}

// TestLocalBadInput: each wrong input is one line naming what was wrong,
// with the Client's typed errors.
func TestLocalBadInput(t *testing.T) {
	ctx := t.Context()
	l, payments, _, _ := refundDesk(t, t.TempDir())
	oneLine := func(what string, err error, target error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error; want %v", what, target)
		case !errors.Is(err, target):
			t.Errorf("%s: %v; want %v", what, err, target)
		case strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: %q is not one line", what, err)
		}
	}

	_, err := agentrun.NewLocal(agentrun.Config{})
	if err == nil || !strings.HasPrefix(err.Error(), "agentrun.Config: Agents is empty") {
		t.Errorf("NewLocal with no agents: %v; want Register's error", err)
	}
	_, err = agentrun.NewLocal(agentrun.Config{Agents: []agentrun.Agent{{Name: "a", Model: llm.NewScripted(refund.Script())}},
		Guard: journal.NewMemStore(), Content: nil})
	if err == nil || !strings.Contains(err.Error(), "Journal is empty") {
		t.Errorf("NewLocal with no journal: %v; want it named", err)
	}

	_, err = l.Start(ctx, agentrun.StartOptions{ID: "r1", Agent: "payroll", Prompt: "pay"})
	oneLine("start of an unknown agent", err, agentrun.ErrUnknownAgent)
	if err != nil && !strings.Contains(err.Error(), `"payroll"`) || err != nil && !strings.Contains(err.Error(), "refunds, small-refunds") {
		t.Errorf("start of an unknown agent: %v; want it and the agents named", err)
	}
	_, err = l.Start(ctx, agentrun.StartOptions{ID: "r1"})
	if err == nil || !strings.Contains(err.Error(), "no Prompt and no Messages") {
		t.Errorf("start with no prompt: %v", err)
	}

	nobody := l.Run("nobody")
	_, err = nobody.State(ctx)
	oneLine("state of an unknown run", err, agentrun.ErrRunNotFound)
	_, err = nobody.Approve(ctx, "tool/2/0/refund", "")
	oneLine("approve of an unknown run", err, agentrun.ErrRunNotFound)
	_, err = nobody.Resume(ctx)
	oneLine("resume of an unknown run", err, agentrun.ErrRunNotFound)
	oneLine("cancel of an unknown run", nobody.Cancel(ctx), agentrun.ErrRunNotFound)

	run, err := l.Start(ctx, agentrun.StartOptions{ID: "large-1", Prompt: "Order A-1001 arrived broken; please refund it."})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Start(ctx, agentrun.StartOptions{ID: "large-1", Prompt: "again"})
	oneLine("start of an existing run", err, agentrun.ErrRunExists)

	_, err = run.Done(ctx, "tool/2/0/refund", "RF-9")
	oneLine("done of a step that is not Indeterminate", err, agentrun.ErrRefused)
	var refused *agentrun.RefusedError
	if !errors.As(err, &refused) || refused.Op != "reconcile" || refused.RunID != "large-1" {
		t.Errorf("done of a step that is not waiting: %#v; want a *RefusedError of reconcile", err)
	}
	_, err = run.Approve(ctx, "tool/9/0/refund", "")
	oneLine("approve of a marker that is not pending", err, agentrun.ErrRefused)
	_, err = run.Approve(ctx, "tool/2/0/refund", "sha256:"+strings.Repeat("0", 16))
	oneLine("approve with another digest", err, agentrun.ErrDigestMismatch)
	_, err = run.Deny(ctx, "tool/2/0/refund", "", "")
	oneLine("deny with no reason", err, agentrun.ErrRefused)

	if err := run.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := run.State(ctx)
	if err != nil || st.Status != agentrun.StatusCancelled {
		t.Fatalf("after cancel: %+v, %v", st, err)
	}
	oneLine("cancel of a cancelled run", run.Cancel(ctx), agentrun.ErrRunEnded)
	_, err = run.Approve(ctx, "tool/2/0/refund", "")
	oneLine("approve of a cancelled run", err, agentrun.ErrRunEnded)
	var ended *agentrun.EndedError
	if !errors.As(err, &ended) || ended.Status != agentrun.StatusCancelled {
		t.Errorf("approve of a cancelled run: %#v; want an *EndedError, Cancelled", err)
	}
	if n := payments.Refunds(); n != 0 {
		t.Errorf("%d refunds; want 0", n)
	}
}

// The run TestLocalIndeterminate's child process drives; its env var
// holds the journal folder and the effect file.
const (
	killRun = "kill-1"
	killEnv = "AGENTRUN_TEST_LOCAL_KILL"
)

// killDesk is a local engine whose refund write appends a line to effect
// (fsynced) and then, when block, never returns.
func killDesk(t *testing.T, dir, effect string, block bool, calls *atomic.Int32) *agentrun.Local {
	t.Helper()
	pay, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true, Approval: "never"},
		func(_ context.Context, in refund.RefundInput) (refund.Receipt, error) {
			calls.Add(1)
			f, err := os.OpenFile(effect, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return refund.Receipt{}, err
			}
			defer f.Close()
			if _, err := fmt.Fprintf(f, "refund %s %d\n", in.OrderID, in.AmountCents); err != nil {
				return refund.Receipt{}, err
			}
			if err := f.Sync(); err != nil {
				return refund.Receipt{}, err
			}
			if block {
				select {} // the process is killed here, its effect made and not recorded
			}
			return refund.Receipt{RefundID: "RF-0001", OrderID: in.OrderID, AmountCents: in.AmountCents}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: json.RawMessage(`{"order_id":"A-1001","amount_cents":4999,"reason":"arrived broken"}`)}}},
		{Text: "Refunded: " + llm.LastToolResult, TextOnError: "Not refunded: " + llm.LastToolResult},
	}})
	l, err := agentrun.NewLocal(agentrun.Config{Journal: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Agents: []agentrun.Agent{{Name: refund.AgentName, Model: model, System: refund.System, Tools: []tools.Tool{pay}}}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHelperLocalKill is TestLocalIndeterminate's child process: it drives
// the run into its refund, which blocks after its effect until the parent
// kills the process. Without the env var it does nothing.
func TestHelperLocalKill(t *testing.T) {
	v := os.Getenv(killEnv)
	if v == "" {
		t.Skip("the child process of TestLocalIndeterminate")
	}
	dir, effect, _ := strings.Cut(v, string(os.PathListSeparator))
	l := killDesk(t, dir, effect, true, &atomic.Int32{})
	_, err := l.Start(t.Context(), agentrun.StartOptions{ID: killRun, Prompt: "Order A-1001 arrived broken; please refund it."})
	t.Fatalf("the refund returned (%v); it should block until the process is killed", err)
}

// TestLocalIndeterminate: a process is SIGKILLed inside a refund whose
// effect happened and was not recorded. The run is then Indeterminate;
// a person settles it with Done through the Local API, and the run
// completes with the person's result: exactly one refund.
func TestLocalIndeterminate(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	effect := filepath.Join(t.TempDir(), "refunds")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperLocalKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+dir+string(os.PathListSeparator)+effect)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		if b, _ := os.ReadFile(effect); len(b) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the child made no refund: %v\n%s", ctx.Err(), out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	var calls atomic.Int32
	l := killDesk(t, dir, effect, false, &calls)
	run := l.Run(killRun)
	st, err := run.State(ctx)
	if err != nil || st.Status != agentrun.StatusIndeterminate || st.Indeterminate != "tool/1/0/refund" {
		t.Fatalf("after the kill: %+v, %v; want Indeterminate at tool/1/0/refund\n%s", st, err, out.String())
	}
	calls0, err := run.Pending(ctx)
	if err != nil || len(calls0) != 1 || !calls0[0].Indeterminate {
		t.Fatalf("pending %+v, %v; want the Indeterminate refund", calls0, err)
	}
	var args refund.RefundInput
	if err := calls0[0].Args(&args); err != nil || args.OrderID != "A-1001" || args.AmountCents != 4999 {
		t.Errorf("the Indeterminate refund's arguments: %+v, %v", args, err)
	}
	// Resumed before a person settles it, it stays Indeterminate: the
	// write does not run again.
	if res, err := run.Resume(ctx); err != nil || res.Status != agentrun.StatusIndeterminate {
		t.Fatalf("resumed unsettled: %+v, %v; want Indeterminate", res, err)
	}
	const settled = `{"refund_id":"RF-PERSON"}`
	if _, err := run.Done(ctx, st.Indeterminate, settled); err != nil {
		t.Fatal(err)
	}
	res, err := run.Resume(ctx)
	if err != nil || res.Status != agentrun.StatusCompleted || !strings.Contains(res.Answer, "RF-PERSON") {
		t.Fatalf("after done: %+v, %v; want Completed with the person's result", res, err)
	}
	b, err := os.ReadFile(effect)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 || calls.Load() != 0 {
		t.Errorf("%d refunds made (%d by the parent); want exactly 1, the killed one's", n, calls.Load())
	}
}

// TestLocalSubAgent: an agent that calls the refunds agent as a tool runs
// it as a child run; the child's refund waits for approval, which the top
// run's Pending shows and its Approve decides; the top run completes with
// the child's answer, after exactly one refund.
func TestLocalSubAgent(t *testing.T) {
	ctx := t.Context()
	payments := refund.NewPayments(refund.SampleOrders()...)
	ts, err := refund.Tools(payments)
	if err != nil {
		t.Fatal(err)
	}
	desk := llm.NewScripted(llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: refund.AgentName, Args: json.RawMessage(`{"task":"Order A-1001 arrived broken; please refund it."}`)}}},
		{Text: "The refunds desk says: " + llm.LastToolResult},
	}})
	l, err := agentrun.NewLocal(agentrun.Config{Journal: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Agents: []agentrun.Agent{
		{Name: "support", Model: desk, Agents: []string{refund.AgentName}},
		{Name: refund.AgentName, Description: "Refunds orders.", Model: llm.NewScripted(largeScript()), System: refund.System, Tools: ts},
	}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := l.Start(ctx, agentrun.StartOptions{ID: "support-1", Prompt: "A customer's order A-1001 arrived broken."})
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.State(ctx)
	if err != nil || st.Status != agentrun.StatusAwaitingApproval || st.Child == nil || st.Child.Agent != refund.AgentName {
		t.Fatalf("state %+v, %v; want AwaitingApproval in the refunds agent's child run", st, err)
	}
	calls, err := run.Pending(ctx)
	if err != nil || len(calls) != 1 || calls[0].Marker != "tool/2/0/refund" {
		t.Fatalf("pending %+v, %v; want the child's refund", calls, err)
	}
	var args refund.RefundInput
	if err := calls[0].Args(&args); err != nil || args.AmountCents != 4999 {
		t.Fatalf("arguments %+v, %v", args, err)
	}
	if _, err := run.Approve(ctx, calls[0].Marker, calls[0].Digest); err != nil {
		t.Fatal(err)
	}
	res, err := run.Resume(ctx)
	if err != nil || res.Status != agentrun.StatusCompleted || !strings.HasPrefix(res.Answer, "The refunds desk says: Order A-1001 is refunded in full") {
		t.Fatalf("after the approval: %+v, %v", res, err)
	}
	if n := payments.Refunds(); n != 1 {
		t.Fatalf("%d refunds; want 1", n)
	}
	// The child run is reachable by its id, and ended.
	child, err := l.Run(st.Child.Run).State(ctx)
	if err != nil || child.Status != agentrun.StatusCompleted {
		t.Errorf("the child run %s: %+v, %v; want Completed", st.Child.Run, child, err)
	}
}
