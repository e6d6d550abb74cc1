package e2e

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestWorkerMetrics runs the hand example on a worker with
// AGENTRUN_METRICS set: /healthz turns 200 once it polls, and /metrics
// then shows the run's steps by kind (3 model calls, 1 read, 1 write, all
// completed), its approval, its tokens and the Temporal sdk's own metrics.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	worker, base := startMetricsWorker(t, f)
	if out := decideHand(t, f, "e2e-metrics", "approve", map[string]string{"Marker": ticketStep}); !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait:\n%s", out)
	}

	code, body := httpGet(base + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, want := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"agentrun_steps_total", []string{`kind="model"`, `outcome="completed"`}, 3},
		{"agentrun_steps_total", []string{`kind="read"`, `outcome="completed"`}, 1},
		{"agentrun_steps_total", []string{`kind="write"`, `outcome="completed"`}, 1},
		{"agentrun_steps_total", []string{`outcome="failed"`}, 0},
		{"agentrun_steps_total", []string{`outcome="indeterminate"`}, 0},
		{"agentrun_step_duration_seconds_count", []string{`kind="model"`}, 3},
		{"agentrun_step_duration_seconds_count", []string{`kind="write"`}, 1},
		{"agentrun_approvals_total", []string{`decision="approve"`}, 1},
		{"agentrun_approvals_total", []string{`decision="deny"`}, 0},
	} {
		if got := sum(body, want.name, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.value)
		}
	}
	if got := sum(body, "agentrun_tokens_total", `model="scripted"`, `direction="input"`); got <= 0 {
		t.Errorf("agentrun_tokens_total{model=scripted,direction=input} = %v, want > 0", got)
	}
	// The sdk's own metrics, through the same registry: its requests to the
	// server and the latency of the activities this worker ran (5 steps and
	// the tool list).
	if got := sum(body, "temporal_request_total"); got <= 0 {
		t.Errorf("temporal_request_total = %v, want > 0", got)
	}
	if got := sum(body, "temporal_activity_execution_latency_seconds_count", `activity_type="`+activities.NameCallModel+`"`); got != 3 {
		t.Errorf("temporal_activity_execution_latency_seconds_count{activity_type=CallModel} = %v, want 3", got)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}

	if err := worker.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := worker.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d after SIGTERM:\n%s", code, worker.Output())
	}
}

// TestWorkerMetricsDeny: the hand example with its ticket denied. The
// denial reaches the worker with the last model step, which counts it; the
// write never runs.
func TestWorkerMetricsDeny(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	_, base := startMetricsWorker(t, f)
	if out := decideHand(t, f, "e2e-metrics-deny", "deny", map[string]string{"Marker": ticketStep, "Reason": "not during the freeze"}); !strings.Contains(out, "not during the freeze") {
		t.Fatalf("starter --wait:\n%s", out)
	}
	_, body := httpGet(base + "/metrics")
	for _, want := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"agentrun_steps_total", []string{`kind="model"`, `outcome="completed"`}, 3},
		{"agentrun_steps_total", []string{`kind="read"`, `outcome="completed"`}, 1},
		{"agentrun_steps_total", []string{`kind="write"`}, 0},
		{"agentrun_approvals_total", []string{`decision="deny"`}, 1},
		{"agentrun_approvals_total", []string{`decision="approve"`}, 0},
	} {
		if got := sum(body, want.name, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.value)
		}
	}
	if f.ticketCount(t) != 0 {
		t.Error("a denied ticket was written")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// startMetricsWorker starts a worker of f that serves metrics on a free
// port and waits until its /healthz answers 200 with one line; it returns
// the worker and the endpoint's base URL.
func startMetricsWorker(t *testing.T, f *fleet, env ...string) (*testenv.Proc, string) {
	t.Helper()
	addr := freeAddr(t)
	worker := testenv.Start(t, f.env(append([]string{"AGENTRUN_METRICS=" + addr}, env...)...), testenv.Program(t, "worker"))
	base := "http://" + addr
	testenv.WaitFor(t, time.Minute, "/healthz to answer 200", func() bool {
		if !worker.Running() {
			t.Fatalf("worker exited:\n%s", worker.Output())
		}
		code, _ := httpGet(base + "/healthz")
		return code == http.StatusOK
	})
	if _, body := httpGet(base + "/healthz"); strings.Count(body, "\n") != 1 {
		t.Errorf("/healthz body %q, want one line", body)
	}
	return worker, base
}

// decideHand starts the hand example as run, sends signal (approve or
// deny) with payload once it awaits approval, and returns what the starter
// prints when it attaches with --wait until the run ends.
func decideHand(t *testing.T, f *fleet, run, signal string, payload map[string]string) string {
	t.Helper()
	starter := testenv.Program(t, "starter")
	if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	waitStatus(t, f.srv, run, "AwaitingApproval", time.Minute)
	f.temporal(t, "workflow", "signal", "-w", run, "--name", signal, "--input", testenv.MustJSON(payload))
	code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", run, "--wait", prompt)
	if code != 0 {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	return out
}

// TestWorkerHealthWhileStopping: a worker stopping gracefully (SIGTERM)
// while a step runs answers /healthz with 503 until it exits, then exits 0.
func TestWorkerHealthWhileStopping(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	worker, base := startMetricsWorker(t, f, "AGENTRUN_DEMO_DELAY=5s")
	health := base + "/healthz"
	const run = "e2e-health-stopping"
	if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	testenv.WaitFor(t, time.Minute, "tool/1/0/lookup to run", func() bool {
		desc, err := srv.Describe(t, run)
		if err != nil {
			return false
		}
		for _, a := range desc.GetPendingActivities() {
			if a.GetActivityId() == hand.LookupStep && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
				return true
			}
		}
		return false
	})
	if err := worker.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// lookup sleeps 5s and the worker gives running steps 10s: the endpoint
	// is up, and unhealthy, while it finishes.
	var body string
	testenv.WaitFor(t, 4*time.Second, "/healthz to answer 503 while the worker stops", func() bool {
		var code int
		code, body = httpGet(health)
		return code == http.StatusServiceUnavailable
	})
	if body != "stopping\n" {
		t.Errorf("/healthz while stopping: %q, want \"stopping\\n\"", body)
	}
	if code := worker.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("worker exit %d after SIGTERM:\n%s", code, worker.Output())
	}
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// httpGet returns the status and body of a GET, or 0 if it failed.
func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// sum adds the values of the samples of metric name (in the Prometheus
// text format) that carry every one of labels, each written name="value".
func sum(body, name string, labels ...string) float64 {
	total := 0.0
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		series, value, ok := cutLast(rest, " ")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil && match {
			total += v
		}
	}
	return total
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
