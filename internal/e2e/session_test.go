package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestSessionOnDevServer: a run started with starter --session --wait
// answers its prompt and stops Idle (search attribute, current details
// saying how to send a message, starter exit 0); reconcile message --wait
// sends a message and prints the answer to it, twice, step numbering
// going on (llm/2, llm/3), Idle in between; an empty message is refused by
// the update and recorded as rejected when signalled; with no further
// message the session completes with its last answer once
// AGENTRUN_SESSION_IDLE passes. Exactly 3 model calls. The history
// replays.
func TestSessionOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	script := filepath.Join(f.dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"answer 1: {{last_user_message}}"},{"text":"answer 2: {{last_user_message}}"},{"text":"answer 3: {{last_user_message}}"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := f.env("AGENTRUN_MODEL=scripted:"+script, "AGENTRUN_SESSION_IDLE=45s")
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-session"

	code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--session", "--wait", "hello")
	if code != 0 || !strings.Contains(out, "run "+run+": Idle") || !strings.Contains(out, "answer 1: hello") || !strings.Contains(out, "message "+run+" TEXT... --wait") {
		t.Fatalf("starter --session --wait: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "Idle", time.Minute)
	if !st.Session || st.Idle != "45s" || st.AnswerTurn != 1 || st.Turns != 1 {
		t.Fatalf("state when idle: %+v", st)
	}
	f.waitListed(t, run, `AgentRunStatus="Idle"`)
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Idle**") || !strings.Contains(d, "--name message") || !strings.Contains(d, "answer 1: hello") {
		t.Fatalf("current details:\n%s", d)
	}

	// Refused: an empty message (the update), a blank one (the signal).
	if code, out := testenv.Run(t, env, time.Minute, f.srv.CLI, withCodecEndpoint(t, []string{"workflow", "update", "execute", "--address", srv.HostPort, "-w", run, "--name", "message", "--input", `{"Content": ""}`, "--update-id", "empty"})...); code == 0 || !strings.Contains(out, "the content is empty") {
		t.Fatalf("update with an empty message: exit %d\n%s", code, out)
	}
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "message", "--input", `{"Content": "  "}`)
	testenv.WaitFor(t, 30*time.Second, "the blank message recorded as rejected", func() bool {
		s, err := state(t, srv, run)
		return err == nil && len(s.Rejected) == 1 && strings.Contains(s.Rejected[0].Reason, "the content is empty")
	})

	for i, msg := range []string{"also check the staging database", "and the replica"} {
		turn := i + 2
		code, out := testenv.Run(t, env, time.Minute, reconcile, "message", run, msg, "--wait")
		want := "answer " + string(rune('0'+turn)) + ": " + msg
		if code != 0 || !strings.Contains(out, "message accepted by run "+run+" for llm/"+string(rune('0'+turn))) || !strings.Contains(out, want) || !strings.Contains(out, "Idle") {
			t.Fatalf("reconcile message %d: exit %d, want %q\n%s", i+1, code, want, out)
		}
		st := waitStatus(t, srv, run, "Idle", time.Minute)
		if st.AnswerTurn != turn || st.Messages != i+1 || st.Answer != want {
			t.Fatalf("state after message %d: %+v", i+1, st)
		}
		if n := modelCalls(t, srv, run); n != turn {
			t.Fatalf("model calls after message %d: %d, want %d", i+1, n, turn)
		}
	}
	if st = waitStatus(t, srv, run, "Idle", time.Minute); len(st.Steps) != 3 || st.Steps[2].Name != "llm/3" || st.Steps[1].Name != "llm/2" {
		t.Fatalf("steps %+v, want llm/1, llm/2, llm/3", st.Steps)
	}

	st = waitStatus(t, srv, run, "Completed", 2*time.Minute)
	if st.Answer != "answer 3: and the replica" || modelCalls(t, srv, run) != 3 {
		t.Fatalf("after the idle time: %+v, %d model calls; want Completed with answer 3 after 3", st, modelCalls(t, srv, run))
	}
	code, out = testenv.Run(t, env, time.Minute, starter, "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "Completed") || !strings.Contains(out, "answer 3: and the replica") {
		t.Fatalf("starter --wait after the idle time: exit %d\n%s", code, out)
	}
	if s := statusAttr(t, srv, run); s != "Completed" {
		t.Fatalf("AgentRunStatus %s, want Completed", s)
	}
	// The Web UI shows each timer by its summary: the idle timer says
	// what it waits for; none keeps the sdk's "AwaitWithTimeout".
	sums := timerSummaries(t, srv, run)
	if !slices.Contains(sums, "session ends after 45s idle") || slices.Contains(sums, "AwaitWithTimeout") {
		t.Fatalf("timer summaries %q: want the idle timer's, and no sdk default", sums)
	}
	// One version marker, at the start (versionChanges), though the run
	// answered updates while it waited and kept an idle timer.
	versions := 0
	for _, e := range historyEvents(t, srv, run, enumspb.EVENT_TYPE_MARKER_RECORDED) {
		if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "Version" {
			versions++
		}
	}
	if versions != 1 {
		t.Fatalf("version markers: %d, want 1", versions)
	}
	replayHistory(t, f, run)
}

// timerSummaries returns the summaries of runID's timers, in the order
// they started.
func timerSummaries(t *testing.T, srv *testenv.Server, runID string) []string {
	t.Helper()
	var out []string
	for _, e := range historyEvents(t, srv, runID, enumspb.EVENT_TYPE_TIMER_STARTED) {
		var s string
		if p := e.GetUserMetadata().GetSummary(); p != nil {
			if err := json.Unmarshal(p.GetData(), &s); err != nil {
				t.Fatalf("timer summary %q: %v", p.GetData(), err)
			}
		}
		out = append(out, s)
	}
	return out
}

// historyEvents returns runID's history events of type typ.
func historyEvents(t *testing.T, srv *testenv.Server, runID string, typ enumspb.EventType) []*historypb.HistoryEvent {
	t.Helper()
	var out []*historypb.HistoryEvent
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.GetEventType() == typ {
			out = append(out, e)
		}
	}
	return out
}
