package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestStreamIdleTimeoutOnWorker: a real worker with
// AGENTRUN_MODEL_IDLE_TIMEOUT=1s and AGENTRUN_MODEL_TIMEOUT=1m, streaming
// (starter --wait) from an OpenAI-compatible server on loopback that sends
// its answer as server-sent events 400 ms apart. The first request stalls
// after two events and is cut by the idle timeout about a second later;
// Temporal retries the step, and the second answer, which takes about 3.6
// s (more than three idle timeouts) but is never idle for one, completes
// the run.
func TestStreamIdleTimeoutOnWorker(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	var events []string
	for _, e := range strings.Split(readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.sse")), "\n\n") {
		if strings.TrimSpace(e) != "" {
			events = append(events, e+"\n\n")
		}
	}
	const gap = 400 * time.Millisecond
	var mu sync.Mutex
	var starts, ends []time.Time
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		starts = append(starts, time.Now())
		n := len(starts)
		mu.Unlock()
		defer func() {
			mu.Lock()
			ends = append(ends, time.Now())
			mu.Unlock()
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		for i, e := range events {
			if n == 1 && i == 2 {
				<-r.Context().Done() // stalls until the client gives up
				return
			}
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, e)
			fl.Flush()
		}
	}))
	t.Cleanup(sse.Close)
	env := f.env("AGENTRUN_MODEL=openai:test-model", "OPENAI_BASE_URL="+sse.URL+"/v1", "OPENAI_API_KEY=sk-test-idle",
		"AGENTRUN_MODEL_IDLE_TIMEOUT=1s", "AGENTRUN_MODEL_TIMEOUT=1m")
	worker := testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-stream-idle"
	const want = "Your request is filed as TICKET-7. The data owner will review it."

	code, out := testenv.Run(t, f.env(), 2*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait", prompt)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("starter --wait: exit %d\n%s\nworker:\n%s", code, out, worker.Output())
	}
	mu.Lock()
	s, e := append([]time.Time(nil), starts...), append([]time.Time(nil), ends...)
	mu.Unlock()
	if len(s) != 2 || len(e) != 2 {
		t.Fatalf("the server got %d requests (%d ended), want 2", len(s), len(e))
	}
	// The first: two events 400 ms apart, then cut 1s after the second.
	if cut := e[0].Sub(s[0]); cut < 2*gap+time.Second || cut > 10*time.Second {
		t.Fatalf("the stalled request ended %v after it began, want about %v (two events, then the 1s idle timeout)", cut, 2*gap+time.Second)
	}
	// The second: nine events 400 ms apart, longer than the idle timeout.
	if long := e[1].Sub(s[1]); long < time.Duration(len(events))*gap {
		t.Fatalf("the answer took %v, want at least %v", long, time.Duration(len(events))*gap)
	}
	t.Logf("the stalled request was cut after %v; the whole answer took %v", e[0].Sub(s[0]).Round(time.Millisecond), e[1].Sub(s[1]).Round(time.Millisecond))
	if n := modelCalls(t, srv, run); n != 2 {
		t.Fatalf("CallModel attempts: %d, want 2", n)
	}
	st, err := state(t, srv, run)
	if err != nil || st.Status != agent.StatusCompleted || st.StepCount != 1 || st.Answer != want {
		t.Fatalf("final state %+v, %v; want Completed after the one step llm/1", st, err)
	}
	history := f.shownHistory(t, run)
	const cut = "the idle timeout cut the streamed answer: no piece for 1s (AGENTRUN_MODEL_IDLE_TIMEOUT) after 2 pieces"
	if !strings.Contains(history, cut) {
		t.Fatalf("the history does not carry the first attempt's failure %q", cut)
	}
	stopWorker(t, worker)
}
