package refund

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// Order is an order as the payments service keeps it.
type Order struct {
	ID          string `json:"id"`
	Customer    string `json:"customer"`
	AmountCents int    `json:"amount_cents"`
	// Refunded is what was refunded of it so far, in cents.
	Refunded int `json:"refunded_cents"`
}

// Receipt is a refund the payments service made.
type Receipt struct {
	RefundID    string `json:"refund_id"`
	OrderID     string `json:"order_id"`
	AmountCents int    `json:"amount_cents"`
}

// Payments is the example's payments service, in memory: its orders and
// the refunds it made. It is safe for concurrent use.
type Payments struct {
	// Ledger is a file each refund is appended to, synced, before the
	// service answers: a worker that dies after a refund leaves it
	// counted. Default "": none.
	Ledger string

	mu       sync.Mutex
	orders   map[string]*Order
	receipts map[string]Receipt // by request id
	made     int
	lookups  int
}

// NewPayments returns a payments service holding orders.
func NewPayments(orders ...Order) *Payments {
	p := &Payments{orders: map[string]*Order{}, receipts: map[string]Receipt{}}
	for _, o := range orders {
		p.orders[o.ID] = &o
	}
	return p
}

// SampleOrders are the orders the example's payments service starts with.
func SampleOrders() []Order {
	return []Order{
		{ID: "A-1001", Customer: "Ada", AmountCents: 4999},
		{ID: "A-1002", Customer: "Grace", AmountCents: 1250},
	}
}

// Order returns the order id, or an error when there is none.
func (p *Payments) Order(id string) (Order, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lookups++
	o, ok := p.orders[id]
	if !ok {
		return Order{}, fmt.Errorf("no order %q", id)
	}
	return *o, nil
}

// Refund pays amountCents of order id back, once per requestID: a request
// id it has seen gets the receipt of its first refund and pays nothing. An
// error means nothing was paid.
func (p *Payments) Refund(requestID, id string, amountCents int) (Receipt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if requestID == "" {
		return Receipt{}, fmt.Errorf("refund order %s: no request id", id)
	}
	if r, ok := p.receipts[requestID]; ok {
		return r, nil
	}
	o, ok := p.orders[id]
	switch {
	case !ok:
		return Receipt{}, fmt.Errorf("refund order %s: no such order", id)
	case amountCents <= 0 || o.Refunded+amountCents > o.AmountCents:
		return Receipt{}, fmt.Errorf("refund order %s: %d cents; the order was %d cents, %d of them refunded", id, amountCents, o.AmountCents, o.Refunded)
	}
	r := Receipt{RefundID: fmt.Sprintf("RF-%04d", p.made+1), OrderID: id, AmountCents: amountCents}
	if err := appendLine(p.Ledger, fmt.Sprintf("%s %s %d %s\n", r.RefundID, id, amountCents, requestID)); err != nil {
		return Receipt{}, fmt.Errorf("refund order %s: the ledger: %w", id, err) // nothing was paid
	}
	p.made++
	o.Refunded += amountCents
	p.receipts[requestID] = r
	return r, nil
}

// Refunds counts the refunds the service made.
func (p *Payments) Refunds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.made
}

// Lookups counts the orders looked up.
func (p *Payments) Lookups() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookups
}

// OrderInput is the input of the order tool.
type OrderInput struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A-1001"`
}

// RefundInput is the input of the refund tool.
type RefundInput struct {
	OrderID     string `json:"order_id" jsonschema:"the order's id, e.g. A-1001"`
	AmountCents int    `json:"amount_cents" jsonschema:"how much to refund, in cents; at most what is left of the order"`
	Reason      string `json:"reason" jsonschema:"why, in a few words, for the customer's record"`
	// RequestID is filled by the engine with an idempotency key (the same
	// for every attempt of one call); the model never sees it.
	RequestID string `json:"request_id,omitempty"`
}

// Tools are the tools of the refunds agent, over payments: "order", a
// read, and "refund", a write keyed by its request_id.
func Tools(payments *Payments) ([]tools.Tool, error) {
	order, err := agentrun.NewTool(agentrun.ToolOptions{Name: "order", Description: "Look an order up by its id: its customer, amount and what was refunded of it."},
		func(_ context.Context, in OrderInput) (Order, error) {
			return payments.Order(in.OrderID)
		})
	if err != nil {
		return nil, err
	}
	refund, err := agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Description: "Refund part or all of an order to the customer.",
		Write: true, IdempotencyKey: "request_id"},
		func(_ context.Context, in RefundInput) (Receipt, error) {
			return payments.Refund(in.RequestID, in.OrderID, in.AmountCents)
		})
	if err != nil {
		return nil, err
	}
	return []tools.Tool{order, refund}, nil
}

// SmallRefundCents is the largest refund the approval rule lets through
// without a person: $20.
const SmallRefundCents = 2000

// Rule is the refunds agent's approval rule: a refund of at most
// SmallRefundCents goes through; a larger one, and any other call, is
// decided by the tool (a write waits for a person; the email needs none).
func Rule(c agentrun.Call) agentrun.Decision {
	var in RefundInput
	if c.Tool == "refund" && c.Args(&in) == nil && in.AmountCents > 0 && in.AmountCents <= SmallRefundCents {
		return agentrun.Allow
	}
	return agentrun.ByTool
}

// Script is the scripted model's conversation for order A-1001 (49.99):
// ScriptFor("A-1001", 4999).
func Script() llm.Script { return ScriptFor("A-1001", 4999) }

// ScriptFor is the scripted model's conversation for order: look it up,
// refund amountCents of it, email the receipt (the first refund of a new
// Payments is RF-0001), answer with the email's id; when the refund was
// denied or failed, answer that nothing was refunded and why.
func ScriptFor(order string, amountCents int) llm.Script {
	args := func(format string, a ...any) json.RawMessage { return json.RawMessage(fmt.Sprintf(format, a...)) }
	return llm.Script{Turns: []llm.Turn{
		{ToolCalls: []llm.ScriptedCall{{Name: "order", Args: args(`{"order_id":%q}`, order)}}},
		{ToolCalls: []llm.ScriptedCall{{Name: "refund", Args: args(`{"order_id":%q,"amount_cents":%d,"reason":"arrived broken"}`, order, amountCents)}}},
		{ToolCalls: []llm.ScriptedCall{{Name: "email_receipt", Args: args(`{"order_id":%q,"refund_id":"RF-0001"}`, order)}},
			TextOnError: "Nothing was refunded: " + llm.LastToolResult + "."},
		{Text: fmt.Sprintf("Order %s is refunded (RF-0001); the receipt was emailed as %s.", order, llm.LastToolResult),
			TextOnError: "Order " + order + " is refunded (RF-0001), but the receipt could not be emailed: " + llm.LastToolResult + "."},
	}}
}
