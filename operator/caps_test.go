package operator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

// TestOperatorCaps: the size caps on a deny's reason, a done result and the
// queue of messages, for both engines (CheckShape, then CheckLoop): each refusal is one line
// naming the limit; what fits passes.
func TestOperatorCaps(t *testing.T) {
	t.Parallel()
	const marker = hand.TicketStep
	atCap := strings.Repeat("x", operator.MaxMessageLen)
	queue := func(n, size int) *agent.Facts {
		f := agent.NewFacts()
		// Messages given to a model step that ran are no longer queued.
		f.Results["llm/2"] = json.RawMessage(`{}`)
		f.AddMessage("llm/2", strings.Repeat("y", operator.MaxQueuedMessageBytes))
		for i := range n {
			f.AddMessage("llm/3", strings.Repeat("z", size/max(n, 1)+b2i(i < size%max(n, 1))))
		}
		return f
	}
	waiting := &agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: marker}}}
	indet := agent.NewFacts()
	indet.Indeterminate[marker] = true
	for _, tc := range []struct {
		name string
		sig  operator.Signal
		o    *agent.Outcome
		f    *agent.Facts
		want string // "" for valid
	}{
		{"deny reason at the cap", operator.Signal{Name: operator.SignalDeny, Marker: marker, Reason: atCap}, waiting, agent.NewFacts(), ""},
		{"deny reason over", operator.Signal{Name: operator.SignalDeny, Marker: marker, Reason: atCap + "x"}, waiting, agent.NewFacts(),
			fmt.Sprintf("deny: the reason is %d bytes; want at most %d", operator.MaxMessageLen+1, operator.MaxMessageLen)},
		{"done result at the cap", operator.Signal{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeDone, Result: atCap}, nil, indet, ""},
		{"done result over", operator.Signal{Name: operator.SignalReconcile, Step: marker, Outcome: operator.OutcomeDone, Result: atCap + "x"}, nil, indet,
			fmt.Sprintf("reconcile: the done result is %d bytes; want at most %d", operator.MaxMessageLen+1, operator.MaxMessageLen)},
		{"99 queued", operator.Signal{Name: operator.SignalMessage, Content: "m"}, nil, queue(operator.MaxQueuedMessages-1, 1000), ""},
		{"100 queued", operator.Signal{Name: operator.SignalMessage, Content: "m"}, nil, queue(operator.MaxQueuedMessages, 1000),
			fmt.Sprintf("the run already holds %d messages for its next model step; at most %d wait at once", operator.MaxQueuedMessages, operator.MaxQueuedMessages)},
		{"bytes fill", operator.Signal{Name: operator.SignalMessage, Content: "m"}, nil, queue(80, operator.MaxQueuedMessageBytes-1), ""},
		{"bytes over", operator.Signal{Name: operator.SignalMessage, Content: "mm"}, nil, queue(80, operator.MaxQueuedMessageBytes-1),
			fmt.Sprintf("the run already holds %d bytes of messages for its next model step, and this one has 2; at most %d bytes", operator.MaxQueuedMessageBytes-1, operator.MaxQueuedMessageBytes)},
	} {
		err := operator.CheckShape(tc.sig)
		if err == nil {
			err = operator.CheckLoop(tc.sig, tc.o, tc.f)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !errors.Is(err, operator.ErrInvalid)):
			t.Errorf("%s: %v; want one line (ErrInvalid) containing %q", tc.name, err, tc.want)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
