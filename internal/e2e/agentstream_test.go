package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/progress"
)

// TestSubAgentStreamOnDevServer: one progress.Subscribe of a planner
// follows its child. The child's model streams its answer (in pieces over
// 3 s); the subscription of the parent yields the child's step events,
// status and tokens marked with the child's id (Run, Child), the parent's
// own without a mark (but its step.started of the agent call, which names
// the child), the child's items after that step.started, and ends with no
// error when the tree completed. The child's text assembled from its
// tokens is its scripted answer, the parent's its own.
func TestSubAgentStreamOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const answer = "filed T-42: read access to the orders database, for the analytics team"
	turns := []llm.Turn{{Delay: "3s", Text: answer}}
	env := f.env(subAgentFixture(t, t.TempDir(), turns, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-agent-stream"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--stream", "plan it"); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	us := follow(t, srv, run, 0, 0).wait(t, 2*time.Minute)
	t.Logf("read:\n%s", strings.Join(lines(us), "\n"))

	// Both closed when the subscription ended.
	for _, id := range []string{run, child} {
		if st, err := state(t, srv, id); err != nil || st.Status != agent.StatusCompleted {
			t.Fatalf("%s after the subscription ended: %+v (%v), want Completed", id, st.Status, err)
		}
	}
	var own, kid []progress.Update
	startedAt, firstChild := -1, -1
	for i, u := range us {
		switch u.Run {
		case run:
			if u.Token != nil && u.Token.Child != "" {
				t.Errorf("the parent's token marked: %v", u)
			}
			if e := u.Event; e != nil && e.Child != "" {
				if e.Type != progress.EventStepStarted || e.Step != "tool/1/0/filer" || e.Child != child {
					t.Errorf("the parent's event with Child: %v (child %q)", u, e.Child)
				}
				startedAt = i
			}
			own = append(own, u)
		case child:
			if u.Token != nil && u.Token.Child != child || u.Event != nil && u.Event.Child != child {
				t.Errorf("the child's item not marked with its id: %v", u)
			}
			if firstChild < 0 {
				firstChild = i
			}
			kid = append(kid, u)
		default:
			t.Errorf("an item of run %q: %v", u.Run, u)
		}
	}
	if startedAt < 0 || firstChild < startedAt {
		t.Fatalf("the parent's step.started of filer at %d, the child's first item at %d", startedAt, firstChild)
	}
	kinds := func(us []progress.Update) (evs []string, tokens int) {
		for _, u := range us {
			switch {
			case u.Token != nil:
				tokens++
			case u.Event.Type == progress.EventStatus:
				evs = append(evs, "status "+string(u.Event.Status))
			case u.Event.Type == progress.EventStepStarted || u.Event.Type == progress.EventStepCompleted:
				evs = append(evs, u.Event.Type+" "+u.Event.Step)
			}
		}
		return evs, tokens
	}
	kidEvents, kidTokens := kinds(kid)
	if want := []string{"step.started llm/1", "step.completed llm/1", "status Completed"}; !slicesHasInOrder(kidEvents, want) {
		t.Errorf("the child's events %q, want %q in order", kidEvents, want)
	}
	if kidTokens < 2 {
		t.Errorf("the child's tokens: %d items, want 2 or more (its %d-word pieces, over 3 s, in batches of about a second)", kidTokens, llm.StreamWords)
	}
	if got := text(kid, "llm/1", 1); got != answer {
		t.Errorf("the child's text from its tokens %q, want %q", got, answer)
	}
	ownEvents, _ := kinds(own)
	if want := []string{"step.started llm/1", "step.completed llm/1", "step.started tool/1/0/filer", "step.completed tool/1/0/filer",
		"step.started llm/2", "step.completed llm/2", "status Completed"}; !slicesHasInOrder(ownEvents, want) {
		t.Errorf("the parent's events %q, want %q in order", ownEvents, want)
	}
	if got, want := text(own, "llm/2", 1), "The filer says: "+answer; got != want {
		t.Errorf("the parent's text from its tokens %q, want %q", got, want)
	}
	for i := 1; i < len(own); i++ {
		if own[i].Offset <= own[i-1].Offset {
			t.Errorf("the parent's offsets out of order: %v then %v", own[i-1], own[i])
		}
	}
}

// slicesHasInOrder says whether want's strings are in got, in that order.
func slicesHasInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestStarterWaitPrintsChildTokens: starter --wait on a planner prints the
// child's streamed answer after the child's run id and step, and the
// planner's own after its step alone, before the Completed line.
func TestStarterWaitPrintsChildTokens(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const answer = "filed T-43: write access to the billing database"
	env := f.env(subAgentFixture(t, t.TempDir(), []llm.Turn{{Delay: "2s", Text: answer}}, nil)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-agent-stream-wait"
	child := agent.ChildRunID(run, "tool/1/0/filer")
	code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", "plan it")
	t.Logf("starter --wait:\n%s", out)
	if code != 0 {
		t.Fatalf("starter --wait: exit %d", code)
	}
	kid := strings.Index(out, "["+child+"] [llm/1] "+answer+"\n")
	own := strings.Index(out, "[llm/2] The filer says: "+answer+"\n")
	done := strings.Index(out, "run "+run+": Completed")
	if kid < 0 || own < kid || done < own {
		t.Fatalf("want the child's text (at %d), then the planner's (at %d), then Completed (at %d)", kid, own, done)
	}
	if strings.Count(out, "["+child+"]") != 1 {
		t.Fatalf("want one label of the child's")
	}
}
