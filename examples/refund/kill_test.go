package refund_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/examples/refund"
	"github.com/agentrun/agentrun/llm"
)

// teamWorkerEnv makes this test binary a process of the team's worker
// (refund.Worker), configured by a teamWorker in JSON, until killed.
const teamWorkerEnv = "REFUND_EXAMPLE_TEAM_WORKER"

type teamWorker struct {
	HostPort, Queue, Journal string
	// Ledger and Outbox are the payments' and the mailer's files.
	Ledger, Outbox string
	// AnswerDelay is the mailer's: how long it takes to answer after it
	// sent an email.
	AnswerDelay time.Duration
}

// smallRefund is the conversation of the kill test: order A-1002, whose
// refund the approval rule lets through.
func smallRefund() llm.Script { return refund.ScriptFor("A-1002", 1250) }

func init() {
	if v := os.Getenv(teamWorkerEnv); v != "" {
		os.Exit(runTeamWorker(v))
	}
}

// runTeamWorker runs the team's worker process until it is killed.
func runTeamWorker(config string) int {
	var tw teamWorker
	if err := json.Unmarshal([]byte(config), &tw); err != nil {
		fmt.Fprintln(os.Stderr, "team worker:", err)
		return 2
	}
	c, err := client.Dial(client.Options{HostPort: tw.HostPort, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "team worker:", err)
		return 2
	}
	payments := refund.NewPayments(refund.SampleOrders()...)
	payments.Ledger = tw.Ledger
	w, err := refund.Worker(c, tw.Queue, refund.Options{Payments: payments, Mailer: &refund.Mailer{Outbox: tw.Outbox, AnswerDelay: tw.AnswerDelay},
		Journal: tw.Journal, Model: llm.NewScripted(smallRefund()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "team worker:", err)
		return 2
	}
	if err := w.Run(nil); err != nil {
		fmt.Fprintln(os.Stderr, "team worker:", err)
		return 1
	}
	return 0
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestKilledInsideTheEmail: the team's worker process is SIGKILLed inside
// its EmailReceipt activity (the agent's email_receipt, a write), after
// the email left and before it answered. The write is Indeterminate, never
// run again; a person who checked the outbox settles it through the client
// (Done, with the email's id), and a new worker finishes the run: exactly
// one refund and one email.
func TestKilledInsideTheEmail(t *testing.T) {
	c, hostPort := devServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := agentrun.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tw := teamWorker{HostPort: hostPort, Queue: "queue-kill", Journal: filepath.Join(dir, "journal"),
		Ledger: filepath.Join(dir, "ledger"), Outbox: filepath.Join(dir, "outbox"), AnswerDelay: time.Hour}
	env, _ := json.Marshal(tw)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), teamWorkerEnv+"="+string(env))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	const id = "support-kill"
	support, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tw.Queue}, refund.SupportWorkflow, "Order A-1002 arrived broken; please refund it.")
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil && lines(t, tw.Outbox)[0] == "" {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // the email left; its answer never comes
		t.Fatal(err)
	}
	// A new worker of the team comes up: it answers the run's state and
	// goes on with it once a person settled the email.
	payments, mailer := refund.NewPayments(refund.SampleOrders()...), &refund.Mailer{}
	w, err := refund.Worker(c, tw.Queue, refund.Options{Payments: payments, Mailer: mailer, Journal: tw.Journal,
		Model: llm.NewScripted(smallRefund()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	runs, err := agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue: tw.Queue})
	if err != nil {
		t.Fatal(err)
	}
	run := runs.Run(refund.AgentRunID(id))
	var st agentrun.State
	for ctx.Err() == nil {
		if st, err = run.State(ctx); err == nil && st.Status == agentrun.StatusIndeterminate {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Indeterminate != "tool/3/0/email_receipt" {
		t.Fatalf("state %s at %q (%v); want Indeterminate at tool/3/0/email_receipt after the attempt timed out", st.Status, st.Indeterminate, err)
	}
	// The person checked the outbox: the email left as EM-0001.
	if _, err := run.Done(ctx, st.Indeterminate, "EM-0001"); err != nil {
		t.Fatal(err)
	}
	var answer string
	if err := support.Get(ctx, &answer); err != nil {
		t.Fatal(err)
	}
	if want := "Order A-1002 is refunded (RF-0001); the receipt was emailed as EM-0001."; answer != want {
		t.Errorf("answer %q; want %q", answer, want)
	}
	if got := lines(t, tw.Ledger); len(got) != 1 || !strings.HasPrefix(got[0], "RF-0001 A-1002 1250 ") {
		t.Errorf("the ledger holds %q; want exactly one refund of A-1002", got)
	}
	if got := lines(t, tw.Outbox); len(got) != 1 || got[0] != "EM-0001 A-1002 RF-0001" {
		t.Errorf("the outbox holds %q; want exactly one email", got)
	}
	if payments.Refunds() != 0 || mailer.Sent() != 0 {
		t.Errorf("the new worker refunded %d and emailed %d; want nothing run again", payments.Refunds(), mailer.Sent())
	}
}
