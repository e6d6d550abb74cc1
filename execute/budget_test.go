package execute_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
)

// TestContextBudget runs ten turns of 4 KB documents, the last turn with
// two calls, and asks for the eleventh reply under several budgets: the
// oldest results make way for markers naming their step and size, the
// results of the last turn never do, the reply counts them, two executors
// agree, and the store keeps everything.
func TestContextBudget(t *testing.T) {
	t.Parallel()
	const turns = 10
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	set := newSet(t, &docTool{name: "read", size: docSize})
	script := reads(turns-1, "read", keyArgs("budget"), "")
	script.Turns[turns-1] = llm.Turn{ToolCalls: []llm.ScriptedCall{
		{Name: "read", Args: json.RawMessage(`{"key":"last/a"}`)},
		{Name: "read", Args: json.RawMessage(`{"key":"last/b"}`)},
	}}
	script.Turns = append(script.Turns, llm.Turn{Text: "done"})
	warm := &execute.Executor{Model: llm.NewScripted(script), Tools: set, Content: store}
	input := agent.UserMessages("read under a budget")
	d := newDriver(set, "", turns+1, input)
	step := d.runTo(t, ctx, warm, turns+1)
	full := conversation(t, input, script, turns+1, func(_ string, a json.RawMessage) string { return doc(a, docSize) })

	// ask runs the step on a new executor, and a second time on another
	// one, and returns the request and the reply.
	ask := func(t *testing.T, budget int) (agent.ModelRequest, agent.ModelReply) {
		t.Helper()
		var reqs []agent.ModelRequest
		var replies []string
		for range 2 {
			model := record(llm.NewScripted(script))
			e := &execute.Executor{Model: model, Tools: set, Content: store, ContextBudget: budget}
			res, err := e.Execute(ctx, step)
			if err != nil {
				t.Fatal(err)
			}
			reqs, replies = append(reqs, model.last(t)), append(replies, string(res))
		}
		if !reflect.DeepEqual(reqs[0], reqs[1]) || replies[0] != replies[1] {
			t.Fatalf("budget %d: two executors made different requests or replies", budget)
		}
		return reqs[0], decodeReply(t, json.RawMessage(replies[0]))
	}

	for _, tc := range []struct {
		name     string
		budget   int
		min, max int // elided
	}{
		{"no budget", 0, 0, 0},
		{"ample", 1 << 20, 0, 0},
		{"tight", 6000, 1, turns - 2},
		{"smallest", 1, turns - 1, turns - 1}, // all but the two results of the last turn
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, reply := ask(t, tc.budget)
			if reply.Elided < tc.min || reply.Elided > tc.max {
				t.Errorf("the reply says %d results were elided, want %d to %d", reply.Elided, tc.min, tc.max)
			}
			elided := 0
			if len(req.Messages) != len(full) {
				t.Fatalf("%d messages, want %d", len(req.Messages), len(full))
			}
			for i, m := range req.Messages {
				want := full[i]
				if m.Role == agent.RoleTool && m.Content != want.Content {
					marker := fmt.Sprintf("%s (%d bytes)", want.Step, docSize)
					if !strings.Contains(m.Content, marker) || len(m.Content) > 200 {
						t.Errorf("message %d: %.80q, want a marker naming %q", i, m.Content, marker)
					}
					if i != 2+2*elided {
						t.Errorf("message %d (%s) is elided after a newer one was kept", i, want.Step)
					}
					elided++
					want.Content = m.Content
				}
				sameMessages(t, fmt.Sprintf("message %d", i), []agent.Message{m}, []agent.Message{want})
			}
			if elided != reply.Elided {
				t.Errorf("%d results elided, the reply says %d", elided, reply.Elided)
			}
			for _, m := range req.Messages[len(req.Messages)-2:] {
				if len(m.Content) != docSize {
					t.Errorf("%s, of the last turn, is %.60q, want it whole", m.Step, m.Content)
				}
			}
			// The store keeps the whole conversation.
			all, err := warm.Messages(ctx, "test", *reply.Conversation)
			if err != nil {
				t.Fatal(err)
			}
			sameMessages(t, "the stored conversation", all[:len(full)], full)
			t.Logf("budget %d: %d of %d results elided", tc.budget, elided, turns+1)
		})
	}
}
