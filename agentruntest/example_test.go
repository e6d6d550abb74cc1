package agentruntest_test

import (
	"fmt"
	"testing"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agentruntest"
	"github.com/agentrun/agentrun/examples/refund"
	"github.com/agentrun/agentrun/llm"
)

// Example tests the refunds agent of examples/refund: its Go tools over
// the payments service, a scripted model that looks order A-1001 up and
// refunds it, and a person approving the refund. In a test, pass its
// *testing.T to New; an Example has none, so this one passes exampleT.
func Example() {
	var t testing.TB = exampleT{}

	payments := refund.NewPayments(refund.SampleOrders()...)
	tools, err := refund.Tools(payments)
	if err != nil {
		t.Fatalf("tools: %v", err)
	}
	model := agentruntest.Model(
		agentruntest.Call("order", refund.OrderInput{OrderID: "A-1001"}),
		agentruntest.Call("refund", refund.RefundInput{OrderID: "A-1001", AmountCents: 4999, Reason: "arrived broken"}),
		agentruntest.Answer("Refunded: "+llm.LastToolResult),
	)
	env := agentruntest.New(t, agentrun.Config{Agents: []agentrun.Agent{
		{Name: "refunds", Model: model, System: "You handle refunds.", Tools: tools},
	}})
	env.Approve("tool/2/0/refund") // the second model call's first tool call

	res, err := env.Run("refunds", "Order A-1001 arrived broken; refund it.")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	fmt.Println(res.Answer)
	fmt.Println("model calls:", model.Calls(), "refunds:", payments.Refunds(), "lookups:", payments.Lookups())
	// Output:
	// Refunded: {"refund_id":"RF-0001","order_id":"A-1001","amount_cents":4999}
	// model calls: 3 refunds: 1 lookups: 1
}

// exampleT is the part of a *testing.T the kit uses, for an Example.
type exampleT struct{ testing.TB }

func (exampleT) Helper()                           {}
func (exampleT) Cleanup(func())                    {}
func (exampleT) Failed() bool                      { return false }
func (exampleT) Logf(string, ...any)               {}
func (exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
