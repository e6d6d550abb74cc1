package e2e

import (
	"bytes"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// answerReads counts the local activities of runID that read a streamed
// answer from the store (activities.NameReadAnswer).
func answerReads(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	n := 0
	for _, e := range historyEvents(t, srv, runID, enumspb.EVENT_TYPE_MARKER_RECORDED) {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "LocalActivity" {
			continue
		}
		for _, p := range a.GetDetails()["data"].GetPayloads() {
			if bytes.Contains(p.GetData(), []byte(activities.NameReadAnswer)) {
				n++
			}
		}
	}
	return n
}

// checkByRef fails unless reply recorded answer by reference: no text
// inline, the key and size of answer.
func checkByRef(t *testing.T, step string, reply agent.ModelReply, answer string) {
	t.Helper()
	ref := reply.Message.ContentRef
	if reply.Message.Content != "" || ref == nil || ref.Size != len(answer) || ref.Key != (agent.Message{Content: answer}).TextKey() {
		t.Fatalf("%s's recorded reply %+v (ref %+v): want the answer's %d bytes by reference, none inline", step, reply.Message, ref, len(answer))
	}
}

// TestStreamAnswerForgedTokens: while a streamed answer of 100 words is
// being written (4 s), someone with namespace rights publishes a token of
// their own to the run's stream under the step's name and attempt. The
// step records the answer by reference; the run finds that its stream
// does not hold that text (the forged piece is in it), reads the answer
// from the store in one local activity, and completes with the model's
// answer, not the forged one. One model call per step.
func TestStreamAnswerForgedTokens(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(100)
	testenv.Start(t, f.scripted(t, `{"turns":[{"delay":"4s","text":"`+answer+`"}]}`), testenv.Program(t, "worker"))
	const run = "e2e-stream-forged"
	on := true
	startRun(t, f, run, workflows.Input{Messages: agent.UserMessages("Check the VPN policy."), Stream: &on})
	fl := follow(t, srv, run, 0, 0)
	deadline := time.Now().Add(time.Minute)
	for text(fl.updates(), "llm/1", 1) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no token of llm/1 within a minute; read %q", lines(fl.updates()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	pub, err := streams.NewPublisher(streams.PublisherConfig{Client: srv.Client, WorkflowID: run})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(progress.TopicTokens, progress.Token{Step: "llm/1", Attempt: 1, Text: " FORGED"}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	if res.Answer != answer {
		t.Fatalf("answer %q, want the model's %q", res.Answer, answer)
	}
	streamed := text(fl.wait(t, time.Minute), "llm/1", 1)
	if streamed == answer || !bytes.Contains([]byte(streamed), []byte("FORGED")) {
		t.Fatalf("the stream's text of llm/1 %q: want the forged piece in it", streamed)
	}
	checkByRef(t, "llm/1", modelReplies(t, srv, run)["llm/1"], answer)
	if n := answerReads(t, srv, run); n != 1 {
		t.Fatalf("answers read from the store: %d, want 1", n)
	}
	if n := modelCalls(t, srv, run); n != 1 {
		t.Fatalf("model calls: %d, want 1", n)
	}
	replayHistory(t, f, run)
}

// TestStreamWorkerFrozenMidModel: the worker streaming a final answer of
// 100 words (6 s) is frozen (SIGSTOP) after its first words; Temporal
// times the attempt out (heartbeat) and a second worker streams attempt
// 2. The frozen worker is resumed (SIGCONT) while attempt 2 streams: what
// attempt 1 still publishes then (its heartbeat soon tells it the attempt
// is gone, and it drops its last pieces) can only add its own tokens. The
// run answers with attempt 2's text, taken from its own tokens (no store
// read), records it by reference, and shows one step.completed, attempt
// 2's. Three model calls: llm/1 and llm/2's two attempts.
func TestStreamWorkerFrozenMidModel(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(100)
	env := f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"delay":"6s","text":"`+answer+`"}]}`)
	// One activity at a time: frozen inside llm/2, it has no poll open that
	// would take Temporal's retry of it.
	w1 := testenv.Start(t, append(env, "AGENTRUN_MAX_ACTIVITIES=1"), testenv.Program(t, "worker"))
	const run = "e2e-stream-frozen"
	on := true
	startRun(t, f, run, workflows.Input{Messages: agent.UserMessages("Check the VPN policy."), Stream: &on})
	fl := follow(t, srv, run, 0, 0)
	runningOn(t, srv, map[int]*testenv.Proc{w1.Pid(): w1}, run, "llm/2", func() bool {
		return text(fl.updates(), "llm/2", 1) != ""
	})
	if err := w1.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := w1.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(resume)
	w2 := testenv.Start(t, env, testenv.Program(t, "worker"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("frozen worker:\n%s\nsecond worker:\n%s\nstream: %q", w1.Tail(), w2.Tail(), lines(fl.updates()))
		}
	})
	testenv.WaitFor(t, time.Minute, "attempt 2 of llm/2 to stream", func() bool { return text(fl.updates(), "llm/2", 2) != "" })
	resume()
	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	if res.Answer != answer {
		t.Fatalf("answer %q, want %q", res.Answer, answer)
	}
	us := fl.wait(t, time.Minute)
	one, two := text(us, "llm/2", 1), text(us, "llm/2", 2)
	if one == "" || !strings.HasPrefix(answer, one) || two != answer {
		t.Fatalf("attempt 1's text %q (want a start of the answer), attempt 2's %q (want the answer)", one, two)
	}
	began, late := false, 0 // late: attempt 1's tokens after attempt 2's first
	var completed []int
	for _, u := range us {
		switch {
		case u.Token != nil && u.Token.Attempt == 2:
			began = true
		case u.Token != nil && u.Token.Attempt == 1 && began:
			late++
		case u.Event != nil && u.Event.Type == progress.EventStepCompleted && u.Event.Step == "llm/2":
			completed = append(completed, u.Event.Attempt)
		}
	}
	t.Logf("attempt 1's tokens after attempt 2's first: %d; attempt 1 streamed %d of %d bytes", late, len(one), len(answer))
	if !reflect.DeepEqual(completed, []int{2}) {
		t.Fatalf("llm/2's step.completed events name attempts %v, want [2]", completed)
	}
	replies := modelReplies(t, srv, run)
	if replies["llm/2"].Streamed != 2 {
		t.Fatalf("llm/2's recorded reply streamed by attempt %d, want 2", replies["llm/2"].Streamed)
	}
	checkByRef(t, "llm/2", replies["llm/2"], answer)
	if n := answerReads(t, srv, run); n != 0 {
		t.Fatalf("answers read from the store: %d, want 0 (the stream holds attempt 2's text)", n)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	replayHistory(t, f, run)
}
