package agentruntest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/agentruntest"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

type refundArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount_cents"`
}

type refundOut struct {
	Refund string `json:"refund"`
}

// refundTool is a Go write that counts its calls.
func refundTool(t *testing.T, calls *atomic.Int32) *agentrun.Tool {
	t.Helper()
	tool, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true},
		func(_ context.Context, in refundArgs) (refundOut, error) {
			calls.Add(1)
			return refundOut{Refund: fmt.Sprintf("R-%s-%d", in.Order, in.Amount)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// refundScript asks for a refund of order 7, then answers with the
// receipt, or with why nothing was refunded.
func refundScript() *agentruntest.ScriptedModel {
	answer := agentruntest.Answer("Refunded: " + llm.LastToolResult)
	answer.TextOnError = "Not refunded: " + llm.LastToolResult
	return agentruntest.Model(agentruntest.Call("refund", refundArgs{Order: "7", Amount: 1200}), answer)
}

const refundMarker = "tool/1/0/refund"

// TestApprove: an approved write runs exactly once and the model reads
// its result; the model is called twice.
func TestApprove(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refundTool(t, &refunds)}}}})
	env.Approve(refundMarker)
	res, err := env.Run("", "refund order 7")
	if err != nil {
		t.Fatal(err)
	}
	if want := `Refunded: {"refund":"R-7-1200"}`; res.Answer != want || refunds.Load() != 1 || model.Calls() != 2 {
		t.Fatalf("answer %q, %d refunds, %d model calls; want %q, 1 and 2", res.Answer, refunds.Load(), model.Calls(), want)
	}
	st, err := env.State()
	if err != nil || st.Status != agent.StatusCompleted || len(st.Pending) != 0 {
		t.Fatalf("state after the run: %+v, %v; want Completed, nothing pending", st, err)
	}
}

// TestDeny: a denied write never runs; the model reads the reason.
func TestDeny(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refundTool(t, &refunds)}}}})
	env.Deny(refundMarker, "over the limit")
	res, err := env.Run("", "refund order 7")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Not refunded: " + agent.DeniedByOperator + "over the limit"; res.Answer != want || refunds.Load() != 0 || model.Calls() != 2 {
		t.Fatalf("answer %q, %d refunds, %d model calls; want %q, 0 and 2", res.Answer, refunds.Load(), model.Calls(), want)
	}
}

// TestNamedAgentOnApproval: a run of the second agent calls its model
// only; OnApproval sees the pending call once, with its arguments, while
// the state query says AwaitingApproval.
func TestNamedAgentOnApproval(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	general, model := agentruntest.Model(agentruntest.Answer("hello")), refundScript()
	env := agentruntest.New(t, agentrun.Config{Journal: t.TempDir(), Agents: []agentrun.Agent{
		{Name: "general", Model: general},
		{Name: "refunds", Model: model, System: "You handle refunds.", Tools: []tools.Tool{refundTool(t, &refunds)}},
	}})
	var seen []string
	env.OnApproval(func(p agent.Pending) agentruntest.Decision {
		st, err := env.State()
		if err != nil || st.Status != agent.StatusAwaitingApproval {
			t.Errorf("state while deciding: %+v, %v; want AwaitingApproval", st, err)
		}
		seen = append(seen, p.Marker+" "+p.Tool+" "+string(p.Args))
		return agentruntest.Decision{Approve: true}
	})
	res, err := env.Run("refunds", "refund order 7")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{refundMarker + ` refund {"order":"7","amount_cents":1200}`}
	if fmt.Sprint(seen) != fmt.Sprint(want) || refunds.Load() != 1 || model.Calls() != 2 || general.Calls() != 0 {
		t.Fatalf("decided %q, %d refunds, model calls %d (general %d); want %q, 1, 2 (0)", seen, refunds.Load(), model.Calls(), general.Calls(), want)
	}
	if res.Answer != `Refunded: {"refund":"R-7-1200"}` {
		t.Fatalf("answer %q", res.Answer)
	}
	if _, err := env.Run("refunds", "again"); err == nil {
		t.Fatal("a second Run on one Env: no error")
	}
}

// TestUndecided: a run waiting for an approval the test gave no decision
// on ends with ErrWaiting naming the call; the write never ran.
func TestUndecided(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refundTool(t, &refunds)}}}})
	env.Approve("tool/9/0/refund") // another call
	_, err := env.Run("", "refund order 7")
	if !errors.Is(err, agentruntest.ErrWaiting) || !strings.Contains(err.Error(), "status AwaitingApproval, pending "+refundMarker) {
		t.Fatalf("Run: %v; want ErrWaiting naming %s", err, refundMarker)
	}
	if refunds.Load() != 0 || model.Calls() != 1 {
		t.Fatalf("%d refunds, %d model calls; want 0 and 1", refunds.Load(), model.Calls())
	}
}

// TestConfigRefused: a Config Register refuses fails the test with
// Register's line.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	ft := &fatalT{TB: t}
	ft.run(func() { agentruntest.New(ft, agentrun.Config{}) })
	if !strings.Contains(ft.msg, "Agents is empty") {
		t.Fatalf("New with no agents: %q; want Register's error", ft.msg)
	}
}

// TestCallPanicsOnBadArgs: arguments that do not encode are the test's
// mistake, said at once.
func TestCallPanicsOnBadArgs(t *testing.T) {
	t.Parallel()
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), `agentruntest.Call("refund")`) {
			t.Fatalf("recovered %v; want a panic naming the call", p)
		}
	}()
	agentruntest.Call("refund", make(chan int))
}

// TestSubAgentApproval: a planner that calls the refunds agent: the
// child run's call awaiting approval is shown on the planner's run and
// approved through it; the write runs once, each model as scripted.
func TestSubAgentApproval(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	planner := agentruntest.Model(
		agentruntest.Call("refunds", map[string]string{"task": "refund order 7"}),
		agentruntest.Answer("Done: "+llm.LastToolResult),
	)
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{
		{Name: "planner", Model: planner, Agents: []string{"refunds"}},
		{Name: "refunds", Description: "Refunds orders.", Model: model, Tools: []tools.Tool{refundTool(t, &refunds)}},
	}})
	var seen []string
	env.OnApproval(func(p agent.Pending) agentruntest.Decision {
		seen = append(seen, p.Marker)
		return agentruntest.Decision{Approve: true}
	})
	res, err := env.Run("", "refund order 7")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "["+refundMarker+"]" || refunds.Load() != 1 || planner.Calls() != 2 || model.Calls() != 2 {
		t.Fatalf("decided %q, %d refunds, model calls %d and %d; want [%s], 1, 2 and 2", seen, refunds.Load(), planner.Calls(), model.Calls(), refundMarker)
	}
	if !strings.Contains(res.Answer, "R-7-1200") {
		t.Fatalf("answer %q does not name the refund", res.Answer)
	}
}

// TestSubAgentUndecided: a child run's call nobody decided ends the run
// with ErrWaiting naming the child's call; nothing was refunded.
func TestSubAgentUndecided(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int32
	planner := agentruntest.Model(agentruntest.Call("refunds", map[string]string{"task": "refund order 7"}), agentruntest.Answer("Done"))
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{
		{Name: "planner", Model: planner, Agents: []string{"refunds"}},
		{Name: "refunds", Description: "Refunds orders.", Model: refundScript(), Tools: []tools.Tool{refundTool(t, &refunds)}},
	}})
	_, err := env.Run("", "refund order 7")
	if !errors.Is(err, agentruntest.ErrWaiting) || !strings.Contains(err.Error(), "a child run at status AwaitingApproval, pending "+refundMarker) {
		t.Fatalf("Run: %v; want ErrWaiting naming the child's %s", err, refundMarker)
	}
	if refunds.Load() != 0 || planner.Calls() != 1 {
		t.Fatalf("%d refunds, %d planner calls; want 0 and 1", refunds.Load(), planner.Calls())
	}
}

// unknownRefund is a refund whose every call's outcome is unknown, and
// its count of calls.
func unknownRefund(t *testing.T) (*agentrun.Tool, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Write: true, Approval: agent.ApprovalNever},
		func(context.Context, refundArgs) (string, error) {
			calls.Add(1)
			return "", agentrun.OutcomeUnknown(errors.New("the payment provider timed out"))
		})
	if err != nil {
		t.Fatal(err)
	}
	return refund, &calls
}

// TestIndeterminate: a write whose outcome is unknown stops the run as
// Indeterminate; Run ends it with ErrWaiting naming the step, after one
// call of the tool (a write is never run twice).
func TestIndeterminate(t *testing.T) {
	t.Parallel()
	refund, calls := unknownRefund(t)
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}}}})
	_, err := env.Run("", "refund order 7")
	if !errors.Is(err, agentruntest.ErrWaiting) || !strings.Contains(err.Error(), "status Indeterminate, indeterminate "+refundMarker) {
		t.Fatalf("Run: %v; want ErrWaiting naming the Indeterminate %s", err, refundMarker)
	}
	if calls.Load() != 1 || model.Calls() != 1 {
		t.Fatalf("%d tool calls, %d model calls; want 1 and 1", calls.Load(), model.Calls())
	}
}

// flakyModel fails its first call as a server error, then answers as m.
type flakyModel struct {
	*agentruntest.ScriptedModel
	failed atomic.Bool
}

func (m *flakyModel) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	if m.failed.CompareAndSwap(false, true) {
		return agent.ModelReply{}, &llm.Error{Class: llm.ClassServer, Message: "overloaded"}
	}
	return m.ScriptedModel.Complete(ctx, req)
}

// TestModelRetried: a model call that fails with a retryable error is
// tried again (the second attempt on the test environment, whose
// activities have no client) and the run answers.
func TestModelRetried(t *testing.T) {
	t.Parallel()
	model := &flakyModel{ScriptedModel: agentruntest.Model(agentruntest.Answer("hello"))}
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "a", Model: model}}})
	res, err := env.Run("", "hi")
	if err != nil || res.Answer != "hello" || !model.failed.Load() || model.Calls() != 1 {
		t.Fatalf("answer %q, %v, failed once %v, scripted calls %d; want hello, nil, true, 1", res.Answer, err, model.failed.Load(), model.Calls())
	}
}

// TestSettleDone: a write whose outcome is unknown, settled by Done as a
// person who found its effect: the model reads the person's result; the
// tool ran once.
func TestSettleDone(t *testing.T) {
	t.Parallel()
	refund, calls := unknownRefund(t)
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}}}})
	env.Done(refundMarker, "R-7")
	res, err := env.Run("", "refund order 7")
	if err != nil || res.Answer != "Refunded: R-7" || calls.Load() != 1 || model.Calls() != 2 {
		t.Fatalf("answer %q, %v, %d tool calls, %d model calls; want Refunded: R-7, 1 and 2", res.Answer, err, calls.Load(), model.Calls())
	}
}

// payments is a team's refund activity: its first call's outcome is
// unknown (nothing was paid), the next pays.
type payments struct{ calls, refunds atomic.Int32 }

func (p *payments) IssueRefund(_ context.Context, in refundArgs) (refundOut, error) {
	if p.calls.Add(1) == 1 {
		return refundOut{}, agentrun.OutcomeUnknown(errors.New("the gateway's answer was lost"))
	}
	p.refunds.Add(1)
	return refundOut{Refund: "R-" + in.Order}, nil
}

// TestActivityToolRetried: a team's activity as a tool on the test
// environment (registered on TestEnv, as on a worker): its outcome unknown,
// the write is Indeterminate, and Retry runs it once more: two calls, one
// refund, the model reads the receipt.
func TestActivityToolRetried(t *testing.T) {
	t.Parallel()
	p := &payments{}
	refund, err := agentrun.ActivityTool(agentrun.ToolOptions{Name: "refund", Write: true, Approval: agent.ApprovalNever},
		p.IssueRefund, agentrun.ActivityOptions{TaskQueue: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	model := refundScript()
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{{Name: "refunds", Model: model, Tools: []tools.Tool{refund}}}})
	env.TestEnv().RegisterActivity(p.IssueRefund)
	env.Retry(refundMarker)
	res, err := env.Run("", "refund order 7")
	if err != nil || res.Answer != `Refunded: {"refund":"R-7"}` || p.calls.Load() != 2 || p.refunds.Load() != 1 || model.Calls() != 2 {
		t.Fatalf("answer %q, %v, %d calls, %d refunds, %d model calls; want the receipt, 2, 1 and 2", res.Answer, err, p.calls.Load(), p.refunds.Load(), model.Calls())
	}
}
