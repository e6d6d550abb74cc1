package local_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
)

// TestMessageToWaitingLocalRun: a message recorded while the hand example
// awaits approval is given to the next model call (llm/3, after the
// ticket's result) when the run is resumed; an empty message is refused
// and writes nothing; a completed run refuses messages. Exactly 3 model
// calls.
func TestMessageToWaitingLocalRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	script := llm.HandExample()
	script.Turns[2].Text = "Filed " + llm.LastToolResult + "; you said: " + llm.LastUserMessage
	f.exec.inner.(*execute.Executor).Model = llm.NewScripted(script)
	const id = "message"
	if o := f.run(t, id); o.Status != agent.StatusAwaitingApproval {
		t.Fatalf("first run: %+v, want AwaitingApproval", o)
	}
	n := len(f.records(t, id))
	for _, bad := range []string{"", " \n\t"} {
		err := f.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalMessage, Content: bad})
		if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "the content is empty; want some text") || strings.Contains(err.Error(), "\n") {
			t.Errorf("message %q: %v, want a one-line operator.ErrInvalid", bad, err)
		}
	}
	if got := len(f.records(t, id)); got != n {
		t.Fatalf("refused messages wrote %d records", got-n)
	}
	f.signal(t, id, operator.Signal{Name: operator.SignalMessage, Content: "also check the staging database"})
	f.signal(t, id, operator.Signal{Name: operator.SignalApprove, Marker: hand.TicketStep})
	o := f.run(t, id)
	if o.Status != agent.StatusCompleted || o.Answer != "Filed TICKET-1; you said: also check the staging database" {
		t.Fatalf("resumed: %+v, want the message in llm/3's input", o)
	}
	if c := f.exec.count("llm/"); c != 3 || f.ticketCount(t) != 1 {
		t.Fatalf("model calls %d, tickets %d; want 3, 1", c, f.ticketCount(t))
	}
	err := f.j.Signal(t.Context(), id, operator.Signal{Name: operator.SignalMessage, Content: "more"})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "already Completed") {
		t.Fatalf("message to a completed run: %v, want refused as Completed", err)
	}
}
