package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// limitedModels writes a models file giving model the rate limit of rpm
// requests a minute.
func limitedModels(t *testing.T, model string, rpm int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(testenv.MustJSON(map[string]any{model: map[string]any{"limits": map[string]any{"requests_per_minute": rpm}}})), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sample is the fake's answered requests at one instant.
type sample struct {
	at       time.Time
	answered int64
}

// watchFake polls the fake's stats until the test ends and returns a
// function that gives the samples so far.
func watchFake(t *testing.T, root string) func() []sample {
	var mu sync.Mutex
	var samples []sample
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			st, err := fakeStatsErr(root)
			if err != nil {
				continue
			}
			mu.Lock()
			samples = append(samples, sample{time.Now(), st.Providers[providerfake.OpenAI].Requests})
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() []sample {
		mu.Lock()
		defer mu.Unlock()
		return append([]sample(nil), samples...)
	}
}

// rate is the answered requests per second between from and to.
func rate(samples []sample, from, to time.Time) float64 {
	var a, b *sample
	for i := range samples {
		s := &samples[i]
		if a == nil && !s.at.Before(from) {
			a = s
		}
		if !s.at.After(to) {
			b = s
		}
	}
	if a == nil || b == nil || !b.at.After(a.at) {
		return 0
	}
	return float64(b.answered-a.answered) / b.at.Sub(a.at).Seconds()
}

// startRuns starts n runs of the lookup prompt on f's queue.
func startRuns(t *testing.T, f *fleet, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		in := workflows.Input{Messages: agent.UserMessages("look it up three times")}
		if _, err := f.srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: f.queue}, workflows.WorkflowName, in); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// laterModelAttempts counts the model steps of a run that started a second
// attempt: a wait for the rate limit is no failed attempt.
func laterModelAttempts(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	n := 0
	iter := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{} // the model steps' scheduled event ids
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch a := e.Attributes.(type) {
		case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
			scheduled[e.EventId] = activities.Method(a.ActivityTaskScheduledEventAttributes.ActivityType.GetName()) == "CallModel"
		case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
			if scheduled[a.ActivityTaskStartedEventAttributes.ScheduledEventId] && a.ActivityTaskStartedEventAttributes.Attempt > 1 {
				n++
			}
		}
	}
	return n
}

// TestRateLimitSharedByFleetOnDevServer: three worker processes share one
// models file's limit of 360 requests a minute, which the provider fake
// enforces (30 in any 5 s). 60 runs of 4 model calls want far more. The
// fake refuses none (the fleet's pace stays under the limit), the fleet
// uses the limit whole, after one worker is SIGKILLed the other two still
// do (a dead worker holds no share), and so does the last one while the
// second is frozen (SIGSTOP). Once the frozen one goes on, its calls take
// new slots rather than go at once. Every run completes.
func TestRateLimitSharedByFleetOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	_, root := testenv.ProviderFake(t, "-rpm", "30", "-window", "5s", "-tpm", "100000000", "-turns", "3")
	samples := watchFake(t, root)
	f := newFleet(t, srv)
	env := f.env(append(testenv.ProviderFakeEnv(root, "openai", "fake-model"), "AGENTRUN_MODELS="+limitedModels(t, "openai:fake-model", 360))...)
	var workers []*testenv.Proc
	for range 3 {
		workers = append(workers, testenv.Start(t, env, testenv.Program(t, "worker")))
	}
	for _, w := range workers {
		if err := w.WaitLogged(t.Context(), "worker started", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	runs := startRuns(t, f, "e2e-limit", 60)
	deadline := time.Now().Add(2 * time.Minute)
	for fakeStats(t, root).Providers[providerfake.OpenAI].Requests < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("the fleet made fewer than 40 model calls in 2 minutes: %+v", fakeStats(t, root).Providers[providerfake.OpenAI])
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := fakeStats(t, root).Providers[providerfake.OpenAI].Requests
	showsWait(t, srv, f, runs)
	if err := workers[0].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	time.Sleep(12 * time.Second)
	if err := workers[1].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	time.Sleep(8 * time.Second)
	if err := workers[1].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for _, id := range runs {
		waitStatus(t, srv, id, "Completed", 3*time.Minute)
	}
	st := fakeStats(t, root).Providers[providerfake.OpenAI]
	limit := 6.0 // a second
	before2 := rate(samples(), killed.Add(-5*time.Second), killed)
	after := rate(samples(), killed.Add(5*time.Second), killed.Add(12*time.Second))
	alone := rate(samples(), frozen.Add(2*time.Second), frozen.Add(8*time.Second))
	t.Logf("%d answered, %d refused; %d before the kill; %.2f a second before it, %.2f with two workers, %.2f with one while the other was frozen (limit %.0f)", st.Requests, st.RateLimited, before, before2, after, alone, limit)
	if alone < 0.85*limit || alone > limit*1.02 {
		t.Errorf("one worker while another was frozen made %.2f calls a second; want the whole limit, %.0f (at least 85%%)", alone, limit)
	}
	if st.RateLimited > st.Requests/100 {
		t.Errorf("the fake refused %d of %d requests: the fleet went over the limit", st.RateLimited, st.Requests)
	}
	if st.Requests < 240 {
		t.Errorf("the fake answered %d requests, want at least 240 (60 runs of 4 calls)", st.Requests)
	}
	if after < 0.85*limit || after > limit*1.02 {
		t.Errorf("two workers after the kill made %.2f calls a second; want the whole limit, %.0f (at least 85%%)", after, limit)
	}
	if before2 > limit*1.02 {
		t.Errorf("three workers made %.2f calls a second, over the limit %.0f", before2, limit)
	}
	// Waits are no failed attempts: only the steps the SIGKILL cut short
	// started a second one.
	later := 0
	for _, id := range runs {
		later += laterModelAttempts(t, srv, id)
	}
	if later > 60 {
		t.Errorf("%d model steps started a second attempt; only those on the killed and the frozen worker should have", later)
	}
}

// TestRateLimit429StormOnDevServer: the models file declares ten times
// what the provider allows, so the fleet meets a storm of 429s. Each
// pauses the whole pool for the provider's Retry-After, the calls take
// later slots inside the same attempt, and every run completes with no
// model step retried.
func TestRateLimit429StormOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	_, root := testenv.ProviderFake(t, "-rpm", "10", "-window", "2s", "-tpm", "100000000", "-turns", "3")
	f := newFleet(t, srv)
	env := f.env(append(testenv.ProviderFakeEnv(root, "openai", "fake-model"), "AGENTRUN_MODELS="+limitedModels(t, "openai:fake-model", 3000))...)
	for range 2 {
		testenv.Start(t, env, testenv.Program(t, "worker"))
	}
	runs := startRuns(t, f, "e2e-storm", 20)
	for _, id := range runs {
		waitStatus(t, srv, id, "Completed", 3*time.Minute)
	}
	st := fakeStats(t, root).Providers[providerfake.OpenAI]
	t.Logf("%d answered, %d refused", st.Requests, st.RateLimited)
	if st.Requests != 80 {
		t.Errorf("the fake answered %d requests, want 80 (20 runs of 4 calls)", st.Requests)
	}
	if st.RateLimited == 0 {
		t.Errorf("no 429: the storm did not happen, so this test proves nothing")
	}
	later := 0
	for _, id := range runs {
		later += laterModelAttempts(t, srv, id)
	}
	if later != 0 {
		t.Errorf("%d model steps started a second attempt: a 429 under a declared limit must not fail an attempt", later)
	}
}

// TestRateLimitLocal: three local runs in three processes of one host share
// the models file's limit through their journal folder: 30 model calls at
// 120 a minute (the fake allows 10 in any 2 s), none refused, and paced
// (the calls take at least 14 s, where unpaced they would take well under
// one); each process prints its runs' waits for the limit.
func TestRateLimitLocal(t *testing.T) {
	t.Parallel()
	_, root := testenv.ProviderFake(t, "-rpm", "10", "-window", "2s", "-tpm", "100000000", "-turns", "9")
	dir := t.TempDir()
	env := append(os.Environ(), append(testenv.ProviderFakeEnv(root, "openai", "fake-model"),
		"AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODELS="+limitedModels(t, "openai:fake-model", 120))...)
	starter := testenv.Program(t, "starter")
	start := time.Now()
	var procs []*testenv.Proc
	for i := range 3 {
		procs = append(procs, testenv.Start(t, env, starter, "--local", "--id", fmt.Sprintf("l%d", i), "look it up nine times"))
	}
	for i, p := range procs {
		if code := p.Wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("local run l%d: exit %d\n%s", i, code, p.Tail())
		}
	}
	took := time.Since(start)
	st := fakeStats(t, root).Providers[providerfake.OpenAI]
	t.Logf("%d answered, %d refused, in %v", st.Requests, st.RateLimited, took.Round(time.Millisecond))
	if st.Requests != 30 || st.RateLimited != 0 {
		t.Errorf("the fake answered %d and refused %d; want 30 and 0", st.Requests, st.RateLimited)
	}
	if took < 14*time.Second {
		t.Errorf("30 calls took %v; at 120 a minute (97.5 %% of it) they take at least 14.9 s", took)
	}
	for i, p := range procs {
		if !strings.Contains(p.Output(), ": waiting for the openai rate limit, next slot in ") {
			t.Errorf("local run l%d did not print a wait for the limit:\n%s", i, p.Tail())
		}
	}
}

// showsWait finds a run of runs whose model step waits for the openai
// rate limit (the fleet is saturated) and checks that its state, current
// details and reconcile show say so, and that it is no retry.
func showsWait(t *testing.T, srv *testenv.Server, f *fleet, runs []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, id := range runs {
			st, err := state(t, srv, id)
			if err != nil || st.LimitWait == nil {
				continue
			}
			w := st.LimitWait
			if w.Pool != "openai" || !strings.HasPrefix(w.Step, "llm/") || w.Attempt != 1 || st.Retry != nil {
				t.Fatalf("run %s waits: %+v, retry %+v; want an llm step's first attempt on openai, no retry", id, w, st.Retry)
			}
			if d := currentDetails(t, srv, id); !strings.Contains(d, "**Waiting for the rate limit**") || !strings.Contains(d, ": waiting for the openai rate limit, next slot at ") {
				t.Fatalf("run %s's details do not show its wait:\n%s", id, d)
			}
			code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "show", id)
			if code != 0 {
				t.Fatalf("reconcile show %s: exit %d\n%s", id, code, out)
			}
			if !strings.Contains(out, "rate limit: llm/") || !strings.Contains(out, "openai rate limit") {
				t.Fatalf("reconcile show %s does not show the wait:\n%s", id, out)
			}
			t.Logf("run %s: %s", id, w.At(time.Now()))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no run showed a wait for the rate limit in 30 s of a saturated fleet")
}
