package refund

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/agentrun/agentrun"
)

// Mailer is the team's mail service: it emails customers the receipts of
// their refunds. With Outbox set it appends each email it sends to that
// file, synced, before it answers: a worker that dies after sending leaves
// the email counted. It is safe for concurrent use.
type Mailer struct {
	// Outbox is a file each sent email is appended to. Default "": none.
	Outbox string
	// AnswerDelay is how long the service takes to answer after it sent
	// an email: a slow network. Default 0.
	AnswerDelay time.Duration

	mu   sync.Mutex
	sent []string
}

// EmailInput is the input of the team's EmailReceipt activity.
type EmailInput struct {
	OrderID  string `json:"order_id" jsonschema:"the refunded order's id, e.g. A-1001"`
	RefundID string `json:"refund_id" jsonschema:"the refund's id, e.g. RF-0001"`
}

// EmailReceipt is the team's activity that emails a refund's receipt to
// the customer: a Temporal activity registered on the team's worker as any
// other (Worker does), which the refunds agent calls as its tool
// "email_receipt" (EmailTool). It returns the email's id.
func (m *Mailer) EmailReceipt(ctx context.Context, in EmailInput) (string, error) {
	if in.OrderID == "" || in.RefundID == "" {
		return "", fmt.Errorf("email receipt: want an order id and a refund id, got %q and %q", in.OrderID, in.RefundID)
	}
	if err := ctx.Err(); err != nil { // an attempt that ended sends nothing
		return "", err
	}
	m.mu.Lock()
	id := fmt.Sprintf("EM-%04d", len(m.sent)+1)
	line := fmt.Sprintf("%s %s %s\n", id, in.OrderID, in.RefundID)
	err := appendLine(m.Outbox, line)
	if err == nil {
		m.sent = append(m.sent, line)
	}
	m.mu.Unlock()
	if err != nil {
		// Whether it left is not known: the run stops as Indeterminate.
		return "", agentrun.OutcomeUnknown(err)
	}
	select {
	case <-time.After(m.AnswerDelay):
	case <-ctx.Done():
		return "", agentrun.OutcomeUnknown(ctx.Err()) // sent; the answer lost
	}
	return id, nil
}

// appendLine appends line to the file path, synced; with no path it does
// nothing.
func appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Sent counts the emails this Mailer sent.
func (m *Mailer) Sent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

// EmailTimeout bounds one attempt of EmailReceipt: an attempt whose worker
// died is known to be over once it passed.
const EmailTimeout = 5 * time.Second

// EmailTool is the team's EmailReceipt activity as the refunds agent's
// tool "email_receipt": a write, scheduled by the run as the activity
// itself on the run's task queue (the team's worker registers it), at most
// once per call; it needs no approval, since the refund it tells of had
// one. On the local engine, EmailReceipt is called directly.
func EmailTool(m *Mailer) (*agentrun.Tool, error) {
	return agentrun.ActivityTool(agentrun.ToolOptions{Name: "email_receipt", Description: "Email the customer the receipt of a refund.",
		Write: true, Approval: "never"},
		m.EmailReceipt, agentrun.ActivityOptions{StartToCloseTimeout: EmailTimeout})
}
