package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// ticketIn is the hand example's create_ticket input, as a Go team would
// declare it for its own tool.
type ticketIn struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// TestClientOnDevServer drives the hand example through the Go client,
// against a real worker process: a run started with Client.Start lists its
// gated create_ticket call with typed arguments; an approve of a marker
// that is not pending and one naming a stale digest are refused as typed
// errors and change nothing; the approval pinned to the digest seen
// lets the run file exactly one ticket and Wait returns its answer. A
// second run is denied: no ticket, and the model's answer carries the
// reason. An unknown run is ErrRunNotFound, an ended one ErrRunEnded, and
// a run id used twice ErrRunExists.
func TestClientOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	c, err := agentrun.NewClient(srv.Client, agentrun.ClientOptions{TaskQueue: f.queue})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	run, err := c.Start(ctx, agentrun.StartOptions{ID: "e2e-client-approve", Prompt: prompt, MaxTurns: 10})
	if err != nil {
		t.Fatal(err)
	}
	call := pendingTicket(t, run, ticketStep)
	var in ticketIn
	if err := call.Args(&in); err != nil || in.Title != hand.TicketTitle || !strings.Contains(in.Body, "approved by the data owner") {
		t.Fatalf("typed args %+v, %v; want the hand example's ticket", in, err)
	}

	// Refusals: typed, one line, nothing changed.
	_, err = run.Approve(ctx, "tool/9/0/create_ticket", "")
	var refused *agentrun.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, agentrun.ErrRefused) || errors.Is(err, agentrun.ErrDigestMismatch) ||
		refused.Op != "approve" || !strings.Contains(refused.Reason, "is not awaiting approval; pending: "+ticketStep) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("approve of another marker: %v; want a one-line *RefusedError naming the pending marker", err)
	}
	stale := "sha256:0000000000000000"
	if _, err := run.Approve(ctx, call.Marker, stale); !errors.Is(err, agentrun.ErrDigestMismatch) || !strings.Contains(err.Error(), call.Digest) {
		t.Fatalf("approve with a stale digest: %v; want ErrDigestMismatch naming %s", err, call.Digest)
	}
	if _, err := run.Deny(ctx, call.Marker, call.Digest, " "); !errors.Is(err, agentrun.ErrRefused) || !strings.Contains(err.Error(), "the reason is empty") {
		t.Fatalf("deny without a reason: %v; want refused by the client", err)
	}
	if st, err := run.State(ctx); err != nil || st.Status != agent.StatusAwaitingApproval || len(st.Rejected) != 0 || f.ticketCount(t) != 0 {
		t.Fatalf("after the refusals: %+v, %v, %d tickets; want AwaitingApproval, nothing rejected, no ticket", st, err, f.ticketCount(t))
	}

	ans, err := run.Approve(ctx, call.Marker, call.Digest)
	if err != nil || ans.Signalled || ans.Digest != call.Digest || ans.State.Status == agent.StatusAwaitingApproval {
		t.Fatalf("approve: %+v, %v; want answered by update, pinned to %s, no longer awaiting", ans, err, call.Digest)
	}
	res, err := run.Wait(ctx)
	if err != nil || res.Status != agent.StatusCompleted || !strings.Contains(res.Answer, "Your request is filed as TICKET-1") || res.Usage.Total() == 0 {
		t.Fatalf("wait: %+v, %v; want Completed with TICKET-1", res, err)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	var ended *agentrun.EndedError
	if _, err := run.Approve(ctx, call.Marker, ""); !errors.As(err, &ended) || !errors.Is(err, agentrun.ErrRunEnded) || ended.Status != agent.StatusCompleted {
		t.Fatalf("approve after the end: %v; want *EndedError Completed", err)
	}
	if _, err := c.Start(ctx, agentrun.StartOptions{ID: run.ID(), Prompt: prompt}); !errors.Is(err, agentrun.ErrRunExists) {
		t.Fatalf("start of a used id: %v; want ErrRunExists", err)
	}

	// A denial: the call does not run, the model reads the reason.
	denied, err := c.Start(ctx, agentrun.StartOptions{ID: "e2e-client-deny", Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	call = pendingTicket(t, denied, ticketStep)
	if ans, err := denied.Deny(ctx, call.Marker, "", "the data owner is away"); err != nil || ans.Digest != call.Digest {
		t.Fatalf("deny: %+v, %v; want answered, pinned to the digest pending (%s)", ans, err, call.Digest)
	}
	res, err = denied.Wait(ctx)
	if err != nil || res.Status != agent.StatusCompleted || !strings.Contains(res.Answer, "the data owner is away") || !strings.Contains(res.Answer, "Nothing was filed") {
		t.Fatalf("wait after deny: %+v, %v; want an answer with the reason", res, err)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets after the denial: %d, want still 1", n)
	}

	// A run naming an agent the worker does not let runs start with fails
	// at its tool listing; Wait returns it as Failed with the reason.
	named, err := c.Start(ctx, agentrun.StartOptions{ID: "e2e-client-agent", Prompt: prompt, Agent: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := named.Wait(ctx); err != nil || res.Status != agentrun.StatusFailed || !strings.Contains(res.Reason, `names agent "nope" at its start`) {
		t.Fatalf("wait for a run of an unknown agent: %+v, %v; want Failed naming the agent", res, err)
	}

	// An unknown run.
	ghost := c.Run("e2e-client-ghost")
	if _, err := ghost.State(ctx); !errors.Is(err, agentrun.ErrRunNotFound) {
		t.Fatalf("state of an unknown run: %v; want ErrRunNotFound", err)
	}
	if _, err := ghost.Approve(ctx, ticketStep, ""); !errors.Is(err, agentrun.ErrRunNotFound) {
		t.Fatalf("approve on an unknown run: %v; want ErrRunNotFound", err)
	}
	if err := ghost.Cancel(ctx); !errors.Is(err, agentrun.ErrRunNotFound) {
		t.Fatalf("cancel of an unknown run: %v; want ErrRunNotFound", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := ghost.Wait(wctx); !errors.Is(err, agentrun.ErrRunNotFound) {
		t.Fatalf("wait for an unknown run: %v; want ErrRunNotFound", err)
	}
}

// pendingTicket waits until run lists its gated create_ticket call at
// marker, and returns it.
func pendingTicket(t *testing.T, run *agentrun.Run, marker string) agentrun.PendingCall {
	t.Helper()
	var calls []agentrun.PendingCall
	testenv.WaitFor(t, time.Minute, run.ID()+" to wait for approval", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var err error
		calls, err = run.Pending(ctx)
		return err == nil && len(calls) > 0
	})
	if c := calls[0]; len(calls) != 1 || c.Marker != marker || c.Tool != "create_ticket" || !agent.ValidDigest(c.Digest) || c.Indeterminate {
		t.Fatalf("%d pending, the first %s (%s, digest %q); want the one create_ticket call at %s with its digest", len(calls), c.Marker, c.Tool, c.Digest, marker)
	}
	return calls[0]
}

// TestClientArgsByReference: a gated call with 2 KiB of arguments, which
// the worker keeps by reference in its content store, is listed with
// typed arguments read from that store (ClientOptions.Content) and checked
// against its digest; without the store, Args says where to point it.
func TestClientArgsByReference(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := strings.Repeat("0123456789abcdef", 128)
	env := f.scripted(t, `{"turns":[{"tool_calls":[{"name":"create_ticket","args":{"title":"Read access","body":"`+body+`"}}]},{"text":"Filed {{last_tool_result}}"}]}`)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	cdc, err := testenv.SuiteCodec()
	if err != nil {
		t.Fatal(err)
	}
	var sealer content.Sealer // nil unless the suite encrypts
	if cdc != nil {
		sealer = cdc
	}
	store, err := content.NewSealedFileStore(filepath.Join(f.dir, "journal", "content"), sealer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := agentrun.NewClient(srv.Client, agentrun.ClientOptions{TaskQueue: f.queue, Content: store})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.Start(t.Context(), agentrun.StartOptions{ID: "e2e-client-ref", Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	call := pendingTicket(t, run, "tool/1/0/create_ticket")
	if st, err := run.State(t.Context()); err != nil || len(st.Pending) != 1 || st.Pending[0].ArgsRef == nil {
		t.Fatalf("state %+v, %v; want the call's arguments by reference", st, err)
	}
	var in ticketIn
	if err := call.Args(&in); err != nil || in.Title != "Read access" || in.Body != body {
		t.Fatalf("typed args: title %q, %d bytes of body, %v; want them whole from the content store", in.Title, len(in.Body), err)
	}
	bare, err := agentrun.NewClient(srv.Client, agentrun.ClientOptions{TaskQueue: f.queue})
	if err != nil {
		t.Fatal(err)
	}
	calls, err := bare.Run(run.ID()).Pending(t.Context())
	if err != nil || len(calls) != 1 {
		t.Fatalf("pending without a store: %+v, %v", calls, err)
	}
	if err := calls[0].Args(&in); err == nil || !strings.Contains(err.Error(), "set ClientOptions.Content") {
		t.Fatalf("args without a store: %v; want it to name ClientOptions.Content", err)
	}
	if _, err := run.Approve(t.Context(), call.Marker, call.Digest); err != nil {
		t.Fatal(err)
	}
	if res, err := run.Wait(t.Context()); err != nil || res.Answer != "Filed TICKET-1" || f.ticketCount(t) != 1 {
		t.Fatalf("wait: %+v, %v, %d tickets; want Filed TICKET-1 and 1 ticket", res, err, f.ticketCount(t))
	}
}
