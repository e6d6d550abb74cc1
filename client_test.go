package agentrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

// TestRefusedDigest: a run's refusal of a decision in agent.DigestMismatch's
// words is ErrDigestMismatch, for the digest sent only; every refusal is
// ErrRefused, in one line with the run's reason.
func TestRefusedDigest(t *testing.T) {
	t.Parallel()
	const given, pending = "sha256:0000000000000000", "sha256:0123456789abcdef"
	mismatch := operator.ErrInvalid.Error() + " " + agent.DigestMismatch(operator.SignalApprove, hand.TicketStep, given, pending)
	for _, tc := range []struct {
		name   string
		sig    operator.Signal
		reason string
		digest bool
	}{
		{"mismatch", operator.Signal{Name: operator.SignalApprove, Marker: hand.TicketStep, Digest: given}, mismatch, true},
		{"other digest sent", operator.Signal{Name: operator.SignalApprove, Marker: hand.TicketStep, Digest: pending}, mismatch, false},
		{"no digest sent", operator.Signal{Name: operator.SignalApprove, Marker: hand.TicketStep}, mismatch, false},
		{"deny of it", operator.Signal{Name: operator.SignalDeny, Marker: hand.TicketStep, Digest: given}, mismatch, false},
		{"not pending", operator.Signal{Name: operator.SignalApprove, Marker: hand.TicketStep, Digest: given},
			"invalid approve: marker " + hand.TicketStep + " is not awaiting approval; pending: none", false},
	} {
		err := error(refused("r1", tc.sig, tc.reason))
		if !errors.Is(err, ErrRefused) || errors.Is(err, ErrDigestMismatch) != tc.digest || errors.Is(err, ErrRunEnded) {
			t.Errorf("%s: %v: Is(ErrDigestMismatch) = %v, want %v (and ErrRefused)", tc.name, err, errors.Is(err, ErrDigestMismatch), tc.digest)
		}
		if want := tc.sig.Name + " refused by run r1: " + tc.reason; err.Error() != want {
			t.Errorf("%s: %q, want %q", tc.name, err, want)
		}
	}
	ended := error(&EndedError{RunID: "r1", Status: agent.StatusCancelled})
	if !errors.Is(ended, ErrRunEnded) || errors.Is(ended, ErrRefused) || ended.Error() != "run r1 is already Cancelled; nothing changes a run after it ended" {
		t.Errorf("ended: %v", ended)
	}
}

// TestStartOptions: bad start options are refused in one line naming the
// field and what is valid; good ones make the run's input.
func TestStartOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    StartOptions
		want string
	}{
		{StartOptions{Prompt: "p"}, "run id: it is empty"},
		{StartOptions{ID: "a/b", Prompt: "p"}, `run id "a/b": want letters`},
		{StartOptions{ID: "r"}, "no Prompt and no Messages"},
		{StartOptions{ID: "r", Prompt: "p", Messages: agent.UserMessages("q")}, "both Prompt and Messages"},
		{StartOptions{ID: "r", Prompt: "p", Agent: "a b"}, `Agent "a b" is not 1 to 64 letters`},
		{StartOptions{ID: "r", Prompt: "p", MaxTurns: -1}, "MaxTurns -1; want a positive number"},
		{StartOptions{ID: "r", Prompt: "p", MaxTokens: -1}, "MaxTokens -1"},
		{StartOptions{ID: "r", Prompt: "p", MaxCost: -0.5}, "MaxCost -0.5"},
		{StartOptions{ID: "r", Prompt: "p", SessionIdle: time.Hour}, "SessionIdle 1h0m0s; want a positive duration with Session"},
	} {
		_, err := tc.o.input()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v; want one line containing %q", tc.o, err, tc.want)
		}
	}
	in, err := StartOptions{ID: "r", Prompt: "hello", Agent: "refunds", MaxTurns: 7, Session: true}.input()
	if err != nil || len(in.Messages) != 1 || in.Messages[0].Content != "hello" || in.MaxTurns != 7 || !in.Session || in.SessionIdle != "24h0m0s" || in.Agent != "refunds" {
		t.Fatalf("input %+v, %v", in, err)
	}
	if _, err := NewClient(nil, ClientOptions{}); err == nil || !strings.Contains(err.Error(), "the Temporal client is nil") {
		t.Fatalf("NewClient(nil): %v", err)
	}
}

// TestNotAnswered: an update admitted but not answered says in one line
// why, by what the task queue's description showed.
func TestNotAnswered(t *testing.T) {
	t.Parallel()
	e := NotAnsweredError{RunID: "r1", Op: "approve", UpdateID: "u1", Wait: 10 * time.Second, TaskQueue: "q"}
	for _, tc := range []struct {
		pollers int
		err     error
		want    string
	}{
		{0, errors.New("unavailable"), "approve admitted by run r1 but not answered within 10s (update id u1; it applies when a worker takes it), and the task queue q could not be described: unavailable"},
		{0, nil, "approve admitted by run r1 but no worker polls task queue q (update id u1): it applies when a worker starts"},
		{2, nil, "approve admitted by run r1 but not answered within 10s although 2 worker(s) poll task queue q (update id u1; it applies when the run's worker takes it)"},
	} {
		e.Pollers, e.PollersErr = tc.pollers, tc.err
		if got := e.Error(); got != tc.want {
			t.Errorf("%d pollers, %v: %q, want %q", tc.pollers, tc.err, got, tc.want)
		}
	}
}
