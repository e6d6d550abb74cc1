package e2e

import (
	"bytes"
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
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		a := e.GetMarkerRecordedEventAttributes()
		if a == nil || a.GetMarkerName() != "LocalActivity" {
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
