package e2e

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestWorkerVersioningUpgrade: a rolling upgrade of a versioned fleet on a
// real dev server. Worker A joins deployment D with the build id derived
// from its binary (no AGENTRUN_BUILD_ID) and is made current with the real
// temporal CLI; run "old" starts on it and parks AwaitingApproval, pinned
// to A. Worker B joins D as build "b2" with AGENTRUN_TEST_WORKFLOW_CHANGE=1
// (a workflow change that fails A's histories with a non-determinism
// error) and is made current: run "new" goes to B. The approval of "old"
// completes it on A (every workflow and activity task of it ran in A's
// process) with 3 model calls and 1 ticket; A then has no running runs
// (the list query) and its version drains (describe-version), and A is
// stopped. "new" then completes on B.
func TestWorkerVersioningUpgrade(t *testing.T) {
	t.Parallel()
	workerVersioningUpgrade(t, testenv.DevServer(t))
}

// workerVersioningUpgrade is TestWorkerVersioningUpgrade on srv (the dev
// server, or a cluster: TestClusterWorkerVersioningUpgrade).
func workerVersioningUpgrade(t *testing.T, srv *testenv.Server) {
	f := newFleet(t, srv)
	dep := "vers-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	prog, starter := testenv.Program(t, "worker"), testenv.Program(t, "starter")
	buildA, buildB := defaultBuildID(t, prog), "b2"
	begin := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(begin).Seconds(), what) }

	a := testenv.Start(t, f.env("AGENTRUN_DEPLOYMENT="+dep), prog)
	f.setCurrent(t, dep, buildA)
	const old, young = "e2e-vers-old", "e2e-vers-new"
	if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", old, prompt); code != 0 {
		t.Fatalf("starter %s: exit %d\n%s", old, code, out)
	}
	waitStatus(t, srv, old, "AwaitingApproval", time.Minute)
	checkPinned(t, srv, old, dep, buildA)
	step(old + " parked AwaitingApproval on A")

	b := testenv.Start(t, f.env("AGENTRUN_DEPLOYMENT="+dep, "AGENTRUN_BUILD_ID="+buildB, "AGENTRUN_TEST_WORKFLOW_CHANGE=1"), prog)
	f.setCurrent(t, dep, buildB)
	if code, out := testenv.Run(t, f.env(), time.Minute, starter, "--id", young, prompt); code != 0 {
		t.Fatalf("starter %s: exit %d\n%s", young, code, out)
	}
	waitStatus(t, srv, young, "AwaitingApproval", time.Minute)
	checkPinned(t, srv, young, dep, buildB)
	step(young + " parked AwaitingApproval on B")

	f.temporal(t, "workflow", "signal", "-w", old, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	if ans := answer(t, srv, old); !strings.Contains(ans, "TICKET-1") {
		t.Fatalf("%s answered %q, want TICKET-1", old, ans)
	}
	if n := modelCalls(t, srv, old); n != 3 {
		t.Fatalf("%s: %d model calls, want 3", old, n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	checkPinned(t, srv, old, dep, buildA)
	step(old + " completed on A")
	wfts, acts, timers := ranOn(t, srv, old, a)
	if wfts < 4 || acts != 6 || timers != 0 {
		t.Fatalf("%s: %d workflow tasks and %d activities on A, %d timers; want every task on A (at least 4 and 6: tools, 3 model calls, lookup, create_ticket), no timer", old, wfts, acts, timers)
	}

	// A has nothing left to run: the list query at once, drainage soon
	// (the dev server checks it every few seconds: devserver.DynamicConfig).
	running := `TemporalWorkerDeploymentVersion="` + dep + `:` + buildA + `" AND ExecutionStatus="Running"`
	testenv.WaitFor(t, 30*time.Second, "no running runs on build A", func() bool {
		return strings.Contains(f.temporal(t, "workflow", "count", "--query", running), "Total: 0")
	})
	step("no running runs on A")
	var drainage string
	testenv.WaitFor(t, time.Minute, "build A to drain", func() bool {
		var v struct {
			DrainageInfo struct {
				DrainageStatus string `json:"drainageStatus"`
			} `json:"drainageInfo"`
		}
		code, out := testenv.Run(t, os.Environ(), time.Minute, f.srv.CLI, "worker", "deployment", "describe-version", "--deployment-name", dep,
			"--build-id", buildA, "--output", "json", "--address", f.srv.HostPort, "--namespace", "default")
		if code != 0 && strings.Contains(out, "Worker Deployment Version not found") {
			return false // seen once in CI while the server updated the version's record: ask again
		}
		if code != 0 {
			t.Fatalf("describe-version: exit %d\n%s", code, out)
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("describe-version: %v\n%s", err, out)
		}
		drainage = v.DrainageInfo.DrainageStatus
		return drainage == "drained"
	})
	step("A drained")
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := a.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("worker A exit %d after SIGTERM:\n%s", code, a.Output())
	}

	// The new run lives on B, with B's change (its timer).
	f.temporal(t, "workflow", "signal", "-w", young, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	if ans := answer(t, srv, young); !strings.Contains(ans, "TICKET-2") {
		t.Fatalf("%s answered %q, want TICKET-2", young, ans)
	}
	if n := modelCalls(t, srv, young); n != 3 {
		t.Fatalf("%s: %d model calls, want 3", young, n)
	}
	if n := f.ticketCount(t); n != 2 {
		t.Fatalf("tickets: %d, want 2", n)
	}
	wfts, acts, timers = ranOn(t, srv, young, b)
	if wfts < 4 || acts != 6 || timers != 1 {
		t.Fatalf("%s: %d workflow tasks and %d activities on B, %d timers; want every task on B and B's timer", young, wfts, acts, timers)
	}
	step(young + " completed on B")
	for _, w := range []*testenv.Proc{a, b} {
		if strings.Contains(w.Output(), "TMPRL1100") {
			t.Fatalf("a worker met a non-determinism error:\n%s", w.Output())
		}
	}
}

// defaultBuildID is the build id a worker derives from its binary at path
// when AGENTRUN_BUILD_ID is unset (config.DefaultBuildID), computed here
// independently: the git revision's first 12 hex digits (+ "-dirty"), else
// the module version, else "exe-" and the binary's SHA-256.
func defaultBuildID(t *testing.T, path string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for _, kv := range info.Settings {
		set[kv.Key] = kv.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		if set["vcs.modified"] == "true" {
			return rev[:12] + "-dirty"
		}
		return rev[:12]
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "exe-" + hex.EncodeToString(sum[:])[:12]
}

// setCurrent makes build the current version of deployment dep with the
// real CLI, retrying while the worker's version is not registered yet.
func (f *fleet) setCurrent(t *testing.T, dep, build string) {
	t.Helper()
	var out string
	args := []string{"worker", "deployment", "set-current-version", "--deployment-name", dep, "--build-id", build, "--yes", "--address", f.srv.HostPort, "--namespace", "default"}
	start := time.Now()
	testenv.WaitFor(t, 30*time.Second, "build "+build+" to become current", func() bool {
		var code int
		code, out = testenv.Run(t, os.Environ(), time.Minute, f.srv.CLI, args...)
		return code == 0
	})
	t.Logf("%s is current in %s after %.1fs: %s", build, dep, time.Since(start).Seconds(), strings.TrimSpace(out))
}

// checkPinned fails unless the server describes runID as pinned to build
// of deployment dep.
func checkPinned(t *testing.T, srv *testenv.Server, runID, dep, build string) {
	t.Helper()
	d, err := srv.Describe(t, runID)
	if err != nil {
		t.Fatal(err)
	}
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	if vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED || vi.GetDeploymentVersion().GetDeploymentName() != dep || vi.GetDeploymentVersion().GetBuildId() != build {
		t.Fatalf("%s: versioning %v on %s:%s; want pinned on %s:%s", runID, vi.GetBehavior(), vi.GetDeploymentVersion().GetDeploymentName(), vi.GetDeploymentVersion().GetBuildId(), dep, build)
	}
}

// ranOn counts the workflow tasks and activities of runID's history that
// w's process completed and started, and the timers the run started; it
// fails the test if any task ran in another process.
func ranOn(t *testing.T, srv *testenv.Server, runID string, w *testenv.Proc) (wfts, acts, timers int) {
	t.Helper()
	pid := strconv.Itoa(w.Cmd.Process.Pid) + "@"
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		var identity string
		switch {
		case e.GetWorkflowTaskCompletedEventAttributes() != nil:
			identity = e.GetWorkflowTaskCompletedEventAttributes().GetIdentity()
			wfts++
		case e.GetActivityTaskStartedEventAttributes() != nil:
			identity = e.GetActivityTaskStartedEventAttributes().GetIdentity()
			acts++
		case e.GetTimerStartedEventAttributes() != nil:
			timers++
			continue
		default:
			continue
		}
		if !strings.HasPrefix(identity, pid) {
			t.Fatalf("%s: event %d (%v) ran on %s, want the worker with pid %s", runID, e.GetEventId(), e.GetEventType(), identity, strings.TrimSuffix(pid, "@"))
		}
	}
	return wfts, acts, timers
}
