package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// words is a text of n numbered words: "w01 w02 ... wNN".
func words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%02d", i+1)
	}
	return strings.Join(ws, " ")
}

// scripted writes a scripted model's script into the fleet's folder and
// returns the worker environment that plays it.
func (f *fleet) scripted(t *testing.T, script string, extra ...string) []string {
	t.Helper()
	path := filepath.Join(f.dir, "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return f.env(append([]string{"AGENTRUN_MODEL=scripted:" + path}, extra...)...)
}

func startRun(t *testing.T, f *fleet, runID string, in workflows.Input) {
	t.Helper()
	if _, err := f.srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: runID, TaskQueue: f.queue}, workflows.WorkflowName, in); err != nil {
		t.Fatal(err)
	}
}

// follower collects a run's stream, through progress.Subscribe, in the
// background.
type follower struct {
	mu   sync.Mutex
	us   []progress.Update
	err  error
	done chan struct{}
}

// follow subscribes to runID's stream from offset from until the run
// closes, or until the item before offset until (if above 0) arrived.
func follow(t *testing.T, srv *testenv.Server, runID string, from, until int64) *follower {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	fl := &follower{done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		defer cancel()
		for u, err := range progress.Subscribe(ctx, srv.Client, runID, progress.Options{From: from}) {
			fl.mu.Lock()
			if err != nil {
				fl.err = err
			} else {
				fl.us = append(fl.us, u)
			}
			fl.mu.Unlock()
			if err != nil || (until > 0 && u.Run == runID && u.Offset >= until-1) {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-fl.done })
	return fl
}

func (fl *follower) updates() []progress.Update {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return append([]progress.Update(nil), fl.us...)
}

// wait waits for the subscription to end and returns what it read.
func (fl *follower) wait(t *testing.T, timeout time.Duration) []progress.Update {
	t.Helper()
	select {
	case <-fl.done:
	case <-time.After(timeout):
		t.Fatalf("the subscription did not end within %v; read %q", timeout, lines(fl.updates()))
	}
	if fl.err != nil {
		t.Fatalf("subscription: %v; read %q", fl.err, lines(fl.updates()))
	}
	return fl.updates()
}

// lines renders updates one a line (progress.Update.String).
func lines(us []progress.Update) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

// text joins the tokens of step's attempt.
func text(us []progress.Update, step string, attempt int) string {
	var b strings.Builder
	for _, u := range us {
		if u.Token != nil && u.Token.Step == step && u.Token.Attempt == attempt {
			b.WriteString(u.Token.Text)
		}
	}
	return b.String()
}

func streamOffset(t *testing.T, srv *testenv.Server, runID string) int64 {
	t.Helper()
	v, err := srv.Client.QueryWorkflow(t.Context(), runID, "", streams.OffsetQuery)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := v.Get(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStreamResumeFromOffset: a session that answered (two model steps, a
// lookup between, the answer's 10 words streamed at once: its first piece
// published at once, the rest joined into a second token) waits Idle with
// 10 items on its stream; a subscriber from offset 0 reads all 10 in
// order, and a second one from offset 5 reads exactly the last 5 of them:
// the same offsets and the same items.
func TestStreamResumeFromOffset(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(10)
	testenv.Start(t, f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"text":"`+answer+`"}]}`), testenv.Program(t, "worker"))
	const run = "e2e-stream-resume"
	startRun(t, f, run, workflows.Input{Messages: agent.UserMessages("Check the VPN policy."), Session: true, SessionIdle: "5m"})
	defer func() { _ = srv.Client.TerminateWorkflow(context.Background(), run, "", "test over") }()
	waitStatus(t, srv, run, "Idle", time.Minute)

	const end, mid = 10, 5
	if n := streamOffset(t, srv, run); n != end {
		t.Fatalf("stream offset when Idle: %d, want %d", n, end)
	}
	all := follow(t, srv, run, 0, end).wait(t, 30*time.Second)
	want := []string{"0 status Running", "1 step.started llm/1", "2 step.completed llm/1",
		"3 step.started tool/1/0/lookup", "4 step.completed tool/1/0/lookup", "5 step.started llm/2",
		"6 token llm/2#1 " + answer[:len("w01 w02 w03 ")], "7 token llm/2#1 " + answer[len("w01 w02 w03 "):], "8 step.completed llm/2", "9 status Idle"}
	if got := lines(all); !reflect.DeepEqual(got, want) {
		t.Fatalf("from 0:\n got %q\nwant %q", got, want)
	}
	if e := all[8].Event; e.Attempt != 1 || e.Kind != agent.KindModel {
		t.Fatalf("llm/2's step.completed %+v, want the model step's attempt 1", e)
	}
	if e := all[9].Event; e.Preview != answer {
		t.Fatalf("Idle event %+v, want the answer as its preview", e)
	}
	suffix := follow(t, srv, run, mid, end).wait(t, 30*time.Second)
	if !reflect.DeepEqual(suffix, all[mid:]) {
		t.Fatalf("from %d:\n got %q\nwant %q", mid, lines(suffix), lines(all[mid:]))
	}
}

// executions counts the executions of runID's chain, walking back from the
// newest through ContinuedExecutionRunId.
func executions(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	n := 0
	for id := ""; ; n++ {
		it := srv.Client.GetWorkflowHistory(t.Context(), runID, id, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		id = e.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if id == "" {
			return n + 1
		}
	}
}

// TestStreamAcrossContinueAsNew: a streaming run of three lookups and an
// answer that continues as new after every 2 steps runs in 4 executions;
// one subscriber from offset 0 reads the whole stream across them: every
// step's started and completed events in order, each once, offsets 0, 1,
// 2, ... with no gap and no repeat, the answer's tokens (its first piece
// at once, then the rest), which add up to the answer, and one status
// Running (not one per execution): 18 items.
func TestStreamAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(8)
	testenv.Start(t, f.scripted(t, `{"turns":[`+
		`{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},`+
		`{"tool_calls":[{"name":"lookup","args":{"topic":"laptop"}}]},`+
		`{"tool_calls":[{"name":"lookup","args":{"topic":"database access"}}]},`+
		`{"text":"`+answer+`"}]}`), testenv.Program(t, "worker"))
	const run = "e2e-stream-can"
	on := true
	startRun(t, f, run, workflows.Input{Messages: agent.UserMessages("Check our policies."), ContinueAfter: 2, Stream: &on})
	fl := follow(t, srv, run, 0, 0)
	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	us := fl.wait(t, time.Minute)
	got := lines(us)
	if res.Answer != answer {
		t.Fatalf("answer %q, want %q", res.Answer, answer)
	}
	if n := executions(t, srv, run); n != 4 {
		t.Fatalf("executions: %d, want 4 (7 steps, continuing as new after every 2)", n)
	}
	for i, u := range us {
		if u.Offset != int64(i) {
			t.Fatalf("item %d has offset %d: want offsets 0, 1, 2, ... without gaps or repeats:\n%q", i, u.Offset, got)
		}
	}
	var steps []string
	for _, u := range us {
		if u.Event != nil && (u.Event.Type == progress.EventStepStarted || u.Event.Type == progress.EventStepCompleted) {
			steps = append(steps, u.Event.Type+" "+u.Event.Step)
		}
	}
	var want []string
	for _, s := range []string{"llm/1", "tool/1/0/lookup", "llm/2", "tool/2/0/lookup", "llm/3", "tool/3/0/lookup", "llm/4"} {
		want = append(want, "step.started "+s, "step.completed "+s)
	}
	if !reflect.DeepEqual(steps, want) {
		t.Fatalf("step events:\n got %q\nwant %q", steps, want)
	}
	// One status Running for the whole run, not one per execution.
	all := []string{"0 status Running",
		"1 step.started llm/1", "2 step.completed llm/1", "3 step.started tool/1/0/lookup", "4 step.completed tool/1/0/lookup",
		"5 step.started llm/2", "6 step.completed llm/2", "7 step.started tool/2/0/lookup", "8 step.completed tool/2/0/lookup",
		"9 step.started llm/3", "10 step.completed llm/3", "11 step.started tool/3/0/lookup", "12 step.completed tool/3/0/lookup",
		"13 step.started llm/4", "14 token llm/4#1 " + answer[:len("w01 w02 w03 ")], "15 token llm/4#1 " + answer[len("w01 w02 w03 "):],
		"16 step.completed llm/4", "17 status Completed"}
	if !reflect.DeepEqual(got, all) {
		t.Fatalf("stream:\n got %q\nwant %q", got, all)
	}
	if s := text(us, "llm/4", 1); s != answer {
		t.Fatalf("llm/4's tokens add up to %q, want the answer %q", s, answer)
	}
	if last := us[len(us)-1].Event; last == nil || last.Type != progress.EventStatus || last.Status != agent.StatusCompleted {
		t.Fatalf("last item %q, want status Completed", got[len(got)-1])
	}
}

// modelReplies decodes the recorded replies of the run's CallModel
// activities by activity id.
func modelReplies(t *testing.T, srv *testenv.Server, runID string) map[string]agent.ModelReply {
	t.Helper()
	ids := map[int64]string{}
	replies := map[string]agent.ModelReply{}
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
			ids[e.GetEventId()] = a.GetActivityId()
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && ids[a.GetScheduledEventId()] != "" {
			var raw json.RawMessage
			if err := testenv.SuiteConverter(t).FromPayloads(a.GetResult(), &raw); err != nil {
				t.Fatal(err)
			}
			r, err := agent.DecodeModelReply(raw)
			if err != nil {
				t.Fatal(err)
			}
			replies[ids[a.GetScheduledEventId()]] = r
		}
	}
	return replies
}

// TestStreamWorkerKilledMidModel: the worker running a streaming model
// step (100 words over 6 s) is SIGKILLed after the subscriber read some of
// its text; a second worker runs the step again. The stream holds the text
// of both attempts, each marked with its attempt: attempt 1's a proper
// start of the answer, attempt 2's the whole answer, all before llm/2's
// step.completed, which names attempt 2, the attempt the recorded reply
// says streamed it. The reply records the answer by reference, and the run
// takes its text from attempt 2's tokens alone (no read from the store).
// llm/2 ran twice, every other step once.
func TestStreamWorkerKilledMidModel(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(100)
	env := f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"delay":"6s","text":"`+answer+`"}]}`)
	w1 := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-stream-kill"
	on := true
	startRun(t, f, run, workflows.Input{Messages: agent.UserMessages("Check the VPN policy."), Stream: &on})
	fl := follow(t, srv, run, 0, 0)
	killRunning(t, srv, map[int]*testenv.Proc{w1.Cmd.Process.Pid: w1}, run, "llm/2", func() bool {
		return text(fl.updates(), "llm/2", 1) != ""
	})
	first := text(fl.updates(), "llm/2", 1)
	testenv.Start(t, env, testenv.Program(t, "worker"))

	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	us := fl.wait(t, time.Minute)
	t.Logf("read before the kill: %q", first)
	if res.Answer != answer {
		t.Fatalf("answer %q, want %q", res.Answer, answer)
	}
	one, two := text(us, "llm/2", 1), text(us, "llm/2", 2)
	if one == "" || len(one) >= len(answer) || !strings.HasPrefix(answer, one) || !strings.HasPrefix(one, first) {
		t.Fatalf("attempt 1's text %q: want a proper start of the answer, holding what was read before the kill (%q)", one, first)
	}
	if two != answer {
		t.Fatalf("attempt 2's text %q, want the answer %q", two, answer)
	}
	var completed []*progress.Event
	for i, u := range us {
		if u.Token != nil && u.Token.Attempt == 2 && len(completed) > 0 {
			t.Fatalf("item %d, a token of attempt 2, after llm/2's step.completed: %q", i, lines(us))
		}
		if u.Token != nil && (u.Token.Step != "llm/2" || u.Token.Attempt < 1 || u.Token.Attempt > 2) {
			t.Fatalf("token %+v: want only llm/2's, of attempt 1 or 2", *u.Token)
		}
		if u.Event != nil && u.Event.Type == progress.EventStepCompleted && u.Event.Step == "llm/2" {
			completed = append(completed, u.Event)
		}
	}
	replies := modelReplies(t, srv, run)
	if len(completed) != 1 || completed[0].Attempt != 2 || replies["llm/2"].Streamed != 2 {
		t.Fatalf("llm/2's step.completed %+v, recorded reply streamed by attempt %d; want one event naming attempt 2, and 2", completed, replies["llm/2"].Streamed)
	}
	if replies["llm/1"].Streamed != 1 {
		t.Fatalf("recorded replies %+v", replies)
	}
	checkByRef(t, "llm/2", replies["llm/2"], answer)
	if n := answerReads(t, srv, run); n != 0 {
		t.Fatalf("answers read from the store: %d, want 0 (the stream holds attempt 2's text)", n)
	}
	h := history(t, srv, run)
	if want := map[string]int32{"tools": 1, "llm/1": 1, "tool/1/0/lookup": 1, "llm/2": 2}; !reflect.DeepEqual(h.attempts, want) {
		t.Fatalf("attempts %v, want %v", h.attempts, want)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	replayHistory(t, f, run)
}

// TestStarterWaitPrintsTokens: starter --wait on a run whose answer takes
// 2 s prints the answer's text as it arrives, after an "[llm/2] " label
// and before the run's Completed line; the model step without text
// (llm/1) prints no label.
func TestStarterWaitPrintsTokens(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	answer := words(12)
	env := f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"vpn"}}]},{"delay":"2s","text":"`+answer+`"}]}`)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-stream-starter"
	code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", "Check the VPN policy.")
	t.Logf("starter --wait:\n%s", out)
	if code != 0 {
		t.Fatalf("starter --wait: exit %d", code)
	}
	live := strings.Index(out, "[llm/2] "+answer+"\n")
	done := strings.Index(out, "run "+run+": Completed")
	if live < 0 || done < 0 || live > done {
		t.Fatalf("want the line %q before %q", "[llm/2] "+answer, "run "+run+": Completed")
	}
	if strings.Contains(out, "[llm/1]") || strings.Count(out, "[llm/2") != 1 {
		t.Fatalf("want one label, [llm/2], and none for llm/1 (no text)")
	}
}
