package agentrun_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agentruntest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
)

// A payments worker process: this test binary, started with
// paymentsWorkerEnv set to a paymentsConfig, runs a Temporal worker of
// the team's IssueRefundToLedger activity and nothing else, until killed.
const paymentsWorkerEnv = "AGENTRUN_TEST_PAYMENTS_WORKER"

type paymentsConfig struct {
	HostPort, Queue string
	// Ledger is the file a refund is appended to (and synced).
	Ledger string
	// Hold is "before" (wait HoldFor, then act only if the attempt's
	// context is live) or "after" (after the refund, wait to be killed).
	Hold    string
	HoldFor time.Duration
}

var payCfg paymentsConfig

// IssueRefundToLedger is the team's refund activity of the payments
// worker process. It says what it does on its standard output.
func IssueRefundToLedger(ctx context.Context, in refundIn) (refundOut, error) {
	fmt.Printf("taken %s\n", in.Order)
	if payCfg.Hold == "before" {
		fmt.Println("holding before the refund")
		time.Sleep(payCfg.HoldFor) // a frozen process finds the time passed when it resumes
		if err := tools.Live(ctx); err != nil {
			fmt.Printf("not refunding: %v\n", err)
			return refundOut{}, err
		}
	}
	id := fmt.Sprintf("R-%s-%d", in.Order, in.Amount)
	f, err := os.OpenFile(payCfg.Ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return refundOut{}, err
	}
	defer f.Close()
	if _, err := f.WriteString(id + "\n"); err != nil {
		return refundOut{}, agentrun.OutcomeUnknown(err)
	}
	if err := f.Sync(); err != nil {
		return refundOut{}, agentrun.OutcomeUnknown(err)
	}
	fmt.Printf("refunded %s\n", id)
	if payCfg.Hold == "after" {
		fmt.Println("holding after the refund")
		select {} // until killed
	}
	return refundOut{Refund: id}, nil
}

// runPaymentsWorker runs the payments worker process and exits.
func runPaymentsWorker() {
	if err := json.Unmarshal([]byte(os.Getenv(paymentsWorkerEnv)), &payCfg); err != nil {
		fmt.Fprintln(os.Stderr, "payments worker:", err)
		os.Exit(2)
	}
	c, err := client.Dial(client.Options{HostPort: payCfg.HostPort, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments worker:", err)
		os.Exit(2)
	}
	// One attempt at a time: a worker frozen inside one holds no poll
	// that could take another attempt (the retry) with it.
	w := worker.New(c, payCfg.Queue, worker.Options{MaxConcurrentActivityExecutionSize: 1})
	w.RegisterActivity(IssueRefundToLedger)
	fmt.Println("payments worker started")
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintln(os.Stderr, "payments worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// paymentsProcess is a running payments worker process.
type paymentsProcess struct {
	cmd *exec.Cmd
	out string // its standard output's file
}

func startPayments(t *testing.T, cfg paymentsConfig) *paymentsProcess {
	t.Helper()
	env, _ := json.Marshal(cfg)
	out := filepath.Join(t.TempDir(), "payments.out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), paymentsWorkerEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &paymentsProcess{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// waitFor waits until the process has printed line.
func (p *paymentsProcess) waitFor(ctx context.Context, t *testing.T, line string) {
	t.Helper()
	for ctx.Err() == nil {
		if b, _ := os.ReadFile(p.out); strings.Contains(string(b), line+"\n") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(p.out)
	t.Fatalf("the payments worker never printed %q; it printed:\n%s", line, b)
}

func ledgerLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// killRig starts a payments worker process holding as cfg says (its
// address, queue and ledger set here) and an agentrun worker in this
// process whose agent calls the team's IssueRefundToLedger on it, with
// timeout as its start-to-close timeout; it starts a run refunding order
// and returns once the payments worker holds inside the refund.
func killRig(ctx context.Context, t *testing.T, srv *testenv.Server, queue, order string, cfg paymentsConfig, timeout time.Duration) (*paymentsProcess, *agentrun.Run, paymentsConfig) {
	t.Helper()
	cfg.HostPort, cfg.Queue, cfg.Ledger = srv.HostPort, queue+"-payments", filepath.Join(t.TempDir(), "ledger")
	pay := startPayments(t, cfg)
	pay.waitFor(ctx, t, "payments worker started")
	tool, err := agentrun.ActivityTool(agentrun.ToolOptions{Name: "refund", Description: "Refund an order.", Write: true, Approval: "never"},
		IssueRefundToLedger, agentrun.ActivityOptions{TaskQueue: cfg.Queue, StartToCloseTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ac := agentWorker(t, srv.Client, queue, agentrun.Agent{Name: "refunds", Model: refundTurns(`{"order":"` + order + `","amount_cents":4000}`), Tools: []tools.Tool{tool}})
	run, err := ac.Start(ctx, agentrun.StartOptions{ID: queue + "-1", Prompt: "refund order " + order})
	if err != nil {
		t.Fatal(err)
	}
	pay.waitFor(ctx, t, "holding "+cfg.Hold+" the refund")
	return pay, run, cfg
}

// TestActivityToolKilledAfterRefund: the team's worker is SIGKILLed after
// its refund and before it answers. The write is Indeterminate (never run
// again); a person settles it through the client with the refund's id:
// exactly one refund.
func TestActivityToolKilledAfterRefund(t *testing.T) {
	t.Parallel()
	srv := devClientServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pay, run, cfg := killRig(ctx, t, srv, "activity-tool-kill", "9", paymentsConfig{Hold: "after"}, 3*time.Second)
	ledger := cfg.Ledger
	if err := pay.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, srv.Client, run.ID(), agentrun.StatusIndeterminate)
	st, err := run.State(ctx)
	if err != nil || st.Indeterminate != "tool/1/0/refund" || !strings.Contains(st.Why, "timeout") {
		t.Fatalf("state: indeterminate %q (%s), %v; want tool/1/0/refund after a timeout", st.Indeterminate, st.Why, err)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Fatalf("the ledger holds %v; want the one refund", got)
	}
	if _, err := run.Done(ctx, st.Indeterminate, "R-9-4000"); err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil || res.Answer != "Refunded: R-9-4000" {
		t.Fatalf("run: %q, %v", res.Answer, err)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Fatalf("the ledger holds %v; want exactly one refund", got)
	}
}

// TestActivityToolFrozenBeforeRefund: the team's worker is frozen
// (SIGSTOP) inside the activity before its refund. The attempt times out
// and the write is Indeterminate; a person's retry is refused until the
// frozen attempt's deadline and the grace have passed, then runs on a
// second worker (one refund). Resumed, the frozen worker finds its
// attempt's context ended and refunds nothing: exactly one refund.
func TestActivityToolFrozenBeforeRefund(t *testing.T) {
	t.Parallel()
	srv := devClientServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// An 8s timeout: the fence (the timeout and fence.Grace after the
	// failure) leaves the test 10s to see the run Indeterminate, read its
	// state and ask for the retry, which a loaded -race run needs (3s
	// left too little once).
	frozen, run, cfg := killRig(ctx, t, srv, "activity-tool-freeze", "11", paymentsConfig{Hold: "before", HoldFor: 2 * time.Second}, 8*time.Second)
	ledger := cfg.Ledger
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStatus(ctx, t, srv.Client, run.ID(), agentrun.StatusIndeterminate)
	st, err := run.State(ctx)
	if err != nil || st.Indeterminate != "tool/1/0/refund" || st.Fence == nil {
		t.Fatalf("state: indeterminate %q, fence %+v, %v; want tool/1/0/refund fenced", st.Indeterminate, st.Fence, err)
	}
	// A retry before the fence passes is refused, naming it.
	var refused *agentrun.RefusedError
	if _, err := run.Retry(ctx, st.Indeterminate); !errors.As(err, &refused) {
		t.Fatalf("a retry within the fence (until %s, now %s): %v; want a refusal", st.Fence.Until.Format(time.TimeOnly), time.Now().Format(time.TimeOnly), err)
	}
	cfg.Hold = ""
	second := startPayments(t, cfg)
	second.waitFor(ctx, t, "payments worker started")
	time.Sleep(time.Until(st.Fence.Until) + 500*time.Millisecond)
	if _, err := run.Retry(ctx, st.Indeterminate); err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil || res.Answer != `Refunded: {"refund":"R-11-4000"}` {
		t.Fatalf("run: %q, %v", res.Answer, err)
	}
	second.waitFor(ctx, t, "refunded R-11-4000")
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen.waitFor(ctx, t, "not refunding: context deadline exceeded")
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Fatalf("the ledger holds %v; want exactly one refund", got)
	}
	keepHistory(t, srv, run.ID())
}

// keepHistory replays the run's history (temporal workflow show --output
// json) with the workflow as it is. With AGENTRUN_HISTORY_DIR set it keeps
// the history there as RUN.json, for workflows/testdata.
func keepHistory(t *testing.T, srv *testenv.Server, runID string) {
	t.Helper()
	out, err := exec.Command(srv.CLI, "workflow", "show", "--address", srv.HostPort, "-w", runID, "--output", "json").Output()
	if err != nil {
		t.Fatalf("temporal workflow show %s: %v", runID, err)
	}
	dir := cmp.Or(os.Getenv("AGENTRUN_HISTORY_DIR"), t.TempDir())
	file := filepath.Join(dir, runID+".json")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	agentruntest.Replay(t, file, agentruntest.ReplayOptions{})
}

func devClientServer(t *testing.T) *testenv.Server {
	t.Helper()
	return testenv.DevServer(t)
}
