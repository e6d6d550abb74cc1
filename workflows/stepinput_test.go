package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// TestModelResultsRecordTheReplyOnce runs the hand example and looks at
// what each model step's activity returned: a step whose conversation
// stayed inline returns no conversation (the loop derives it from the
// step's input), a step that put it in a node returns only the new head,
// so the reply is in each result once; and the run still answers with the
// ticket.
func TestModelResultsRecordTheReplyOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	results := map[string]json.RawMessage{}
	h.env.OnActivity(activities.NameCallModel, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.StepInput) (json.RawMessage, error) {
			res, err := h.acts.CallModel(ctx, in)
			mu.Lock()
			defer mu.Unlock()
			results[in.Step.Name] = res
			return res, err
		})
	h.at(time.Minute, func() {
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	if r := h.result(t); !strings.Contains(r.Answer, "TICKET-1") {
		t.Fatalf("answer %q does not name TICKET-1", r.Answer)
	}
	mu.Lock()
	defer mu.Unlock()
	inline := 0
	for step, raw := range results {
		reply, err := agent.DecodeModelReply(raw)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if strings.Count(string(raw), `"role":"assistant"`) != 1 {
			t.Errorf("%s: result %s; want the reply in it once", step, raw)
		}
		switch c := reply.Conversation; {
		case c == nil:
			inline++
		case c.Head == "" || len(c.Tail) > 0:
			t.Errorf("%s: conversation %+v; want none, or a new head and nothing inline", step, *c)
		}
	}
	if len(results) != 3 || inline == 0 {
		t.Errorf("%d model results, %d of them without a conversation; want 3, some without", len(results), inline)
	}
}
