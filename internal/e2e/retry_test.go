package e2e

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/netfault"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestModelServerDownThenBack runs two runs against OpenAI-compatible
// model servers that refuse connections (nothing listens at their
// address):
//   - one whose server comes back: while it is down, `starter --wait`
//     prints each failed attempt with the error and when the next is due
//     within seconds, `reconcile show` and the Web UI's details show it;
//     once the server listens, the run completes by itself with its
//     answer (one chat request reached the server);
//   - one whose server never comes back: it fails after its 10 attempts,
//     and its reason says so, with how long it tried (the policy's 4m3s),
//     the last error in plain words, what to do, and no sdk flags.
func TestModelServerDownThenBack(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	const key = "sk-test-agentrun-down-1234567890"
	answer := readFile(t, filepath.Join("..", "..", "llm", "providers", "testdata", "openai_text.json"))
	const want = "Your request is filed as TICKET-7. The data owner will review it."
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")

	// The run whose server never comes back starts first: its attempts
	// take 4 minutes.
	never := newFleet(t, srv)
	never.queue += "-never" // a queue of its own: its worker has the other address
	neverEnv := never.env("AGENTRUN_MODEL=openai:test-model", "OPENAI_BASE_URL=http://"+freeAddr(t)+"/v1", "OPENAI_API_KEY="+key)
	testenv.Start(t, neverEnv, testenv.Program(t, "worker"))
	const gone = "e2e-model-server-gone"
	if code, out := testenv.Run(t, neverEnv, time.Minute, starter, "--id", gone, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}

	f := newFleet(t, srv)
	addr := freeAddr(t)
	env := f.env("AGENTRUN_MODEL=openai:test-model", "OPENAI_BASE_URL=http://"+addr+"/v1", "OPENAI_API_KEY="+key)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-model-server-back"
	began := time.Now()
	wait := testenv.Start(t, env, starter, "--id", run, "--wait", prompt)
	// The first attempts fail at once, 1 s apart, then 2 s, 4 s: the
	// starter says so as it looks (every 0.5 s), whichever it sees first.
	if err := wait.WaitLogged(t.Context(), " of 10 failed: NetworkError", 20*time.Second); err != nil {
		t.Fatalf("starter --wait did not print a failed attempt: %v\n%s", err, wait.Output())
	}
	t.Logf("starter --wait printed a failed attempt %v after it started", time.Since(began).Round(time.Millisecond))
	if err := wait.WaitLogged(t.Context(), "retrying llm/1: attempt 3 of 10 failed", 20*time.Second); err != nil {
		t.Fatalf("starter --wait did not print the third failed attempt: %v\n%s", err, wait.Output())
	}
	out := wait.Output()
	for _, s := range []string{"connection refused", "attempt 4 is due at ", addr} {
		if !strings.Contains(out, s) {
			t.Errorf("starter --wait does not say %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "retryable") || strings.Contains(out, "no worker answers") {
		t.Errorf("starter --wait shows the sdk's flags or a worker problem:\n%s", out)
	}
	code, show := testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if code != 0 || !strings.Contains(show, "retrying llm/1: attempt ") || !strings.Contains(show, "NetworkError") {
		t.Fatalf("reconcile show while retrying: exit %d\n%s", code, show)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, "**Retrying**") || !strings.Contains(d, "connection refused") {
		t.Errorf("the Web UI's details while retrying:\n%s", d)
	}

	// The model server comes back at its address.
	fake := newFakeOpenAI(t, func(int, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, answer })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	back := &http.Server{Handler: fake.Config.Handler}
	go func() { _ = back.Serve(ln) }()
	t.Cleanup(func() { _ = back.Close() })
	if code := wait.Wait(t, 2*time.Minute); code != 0 || !strings.Contains(wait.Output(), want) {
		t.Fatalf("starter --wait after the server came back: exit %d\n%s", code, wait.Output())
	}
	if n := len(fake.requests()); n != 1 {
		t.Errorf("the server got %d chat requests once back, want 1", n)
	}
	if st, err := state(t, srv, run); err != nil || st.Status != agent.StatusCompleted || st.Retry != nil {
		t.Errorf("final state %s, retry %+v, %v", st.Status, st.Retry, err)
	}

	// The run whose server never came back.
	st := waitStatus(t, srv, gone, string(agent.StatusFailed), 6*time.Minute)
	for _, s := range []string{"llm/1: the model call failed after 10 attempts over 4m", "NetworkError: ", "connection refused", "The model server did not answer: start it"} {
		if !strings.Contains(st.Reason, s) {
			t.Errorf("the failed run's reason does not say %q: %s", s, st.Reason)
		}
	}
	if strings.Contains(st.Reason, "retryable") {
		t.Errorf("the failed run's reason shows the sdk's flag: %s", st.Reason)
	}
	code, show = testenv.Run(t, neverEnv, time.Minute, reconcile, "show", gone)
	if code != 0 || !strings.Contains(show, "after 10 attempts over 4m") {
		t.Errorf("reconcile show of the failed run: exit %d\n%s", code, show)
	}
	t.Logf("failed: %s", st.Reason)
}

// TestWaitThroughLostConnection: `starter --wait` follows a run through a
// proxy to the frontend; when the proxy cuts every connection it says, in
// one line and once, that it lost the connection to Temporal at that
// address and reconnects, then that Temporal answers again once the proxy
// heals, with no gRPC or HTTP/2 text; the run, approved meanwhile, is then
// followed to its end. --verbose adds the raw error.
func TestWaitThroughLostConnection(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	proxy, err := netfault.Start("frontend-wait", srv.HostPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	const run = "e2e-wait-lost-connection"
	viaProxy := f.env("TEMPORAL_ADDRESS=" + proxy.Addr())
	starter := testenv.Program(t, "starter")
	wait := testenv.Start(t, viaProxy, starter, "--id", run, "--wait", prompt)
	if err := wait.WaitLogged(t.Context(), "started run "+run, time.Minute); err != nil {
		t.Fatalf("starter --wait: %v\n%s", err, wait.Output())
	}
	// The second follower attaches to the run the first started.
	verbose := testenv.Start(t, viaProxy, starter, "--id", run, "--wait", "--verbose")
	for _, p := range []*testenv.Proc{wait, verbose} {
		if err := p.WaitLogged(t.Context(), "AwaitingApproval", time.Minute); err != nil {
			t.Fatalf("starter --wait: %v\n%s", err, p.Output())
		}
	}
	proxy.Cut()
	lost := "lost the connection to Temporal at " + proxy.Addr() + "; reconnecting"
	for _, p := range []*testenv.Proc{wait, verbose} {
		if err := p.WaitLogged(t.Context(), lost, 30*time.Second); err != nil {
			t.Fatalf("starter --wait after the cut: %v\n%s", err, p.Output())
		}
	}
	time.Sleep(3 * time.Second) // several more looks while cut: said once
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	back := "Temporal at " + proxy.Addr() + " answers again"
	for _, p := range []*testenv.Proc{wait, verbose} {
		if err := p.WaitLogged(t.Context(), back, 30*time.Second); err != nil {
			t.Fatalf("starter --wait after the heal: %v\n%s", err, p.Output())
		}
	}
	if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "reconcile"), "approve", run, ticketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	for _, p := range []*testenv.Proc{wait, verbose} {
		if code := p.Wait(t, time.Minute); code != 0 || !strings.Contains(p.Output(), "TICKET-1") {
			t.Fatalf("starter --wait: exit %d\n%s", code, p.Output())
		}
	}
	out := wait.Output()
	if n := strings.Count(out, lost); n != 1 {
		t.Errorf("the lost connection said %d times, want once:\n%s", n, out)
	}
	for _, noise := range []string{"rpc error", "RST_STREAM", "transport", "code = ", "no worker"} {
		if strings.Contains(out, noise) {
			t.Errorf("starter --wait prints %q:\n%s", noise, out)
		}
	}
	if v := verbose.Output(); !strings.Contains(v, lost+"\n  (") {
		t.Errorf("starter --wait --verbose does not add the raw error:\n%s", v)
	}
	t.Logf("starter --wait:\n%s", out)
}
