package clustertest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Stop()
	pgtest.Stop()
	os.Exit(code)
}

// TestSharedCluster: the shared cluster answers, runs 4 history shards,
// keeps visibility in PostgreSQL (the SQL store answers a list query on
// agentrun's attribute) and has agentrun's search attributes registered.
func TestSharedCluster(t *testing.T) {
	c := Shared(t)
	run := func(args ...string) string {
		t.Helper()
		args = append(args, "--address", c.HostPort, "--namespace", "default")
		out, err := exec.Command(c.CLI, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("temporal %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	desc := run("operator", "cluster", "describe", "--detail", "--output", "json")
	if !strings.Contains(desc, `"historyShardCount": 4`) {
		t.Errorf("cluster describe: want historyShardCount 4\n%.2000s", desc)
	}
	if !strings.Contains(desc, `"visibilityStore": "postgres12"`) || !strings.Contains(desc, `"persistenceStore": "postgres12"`) {
		t.Errorf("cluster describe: want persistence and visibility on postgres12\n%.2000s", desc)
	}
	sas := run("operator", "search-attribute", "list")
	for _, name := range []string{"AgentRunStatus", "AgentRunStep", "AgentRunForkOf"} {
		if !strings.Contains(sas, name) {
			t.Errorf("search attribute %s is not registered:\n%s", name, sas)
		}
	}
	if out := run("workflow", "list", "--query", `AgentRunStatus="Indeterminate"`); strings.TrimSpace(out) != "" {
		t.Errorf("workflow list on a new cluster: %q, want nothing", out)
	}
}

// TestStartPortInUse: a port of the cluster in use is a one-line error
// naming it, before anything starts.
func TestStartPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	ports := DefaultPorts()
	ports.Frontend = port
	start := time.Now()
	_, err = Start(t.Context(), Options{Dir: t.TempDir(), Ports: &ports, CLI: "temporal"})
	if err == nil {
		t.Fatal("Start with the frontend's port in use: no error")
	}
	want := "port " + strconv.Itoa(port) + " (the frontend) is in use"
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q, want one line with %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the error took %v: the check must come before anything starts", d)
	}
}

// TestStartFailureStopsWhatStarted: a cluster whose server exits at start
// (a membership port above 32767, which the server cannot store) fails
// Start with the server's error, and what had started is stopped: the
// server's ports are free again.
func TestStartFailureStopsWhatStarted(t *testing.T) {
	if _, err := testkit.Bin("temporal-server", "temporal-server"); err != nil {
		testkit.Unavailable(t, "the Temporal server", err)
	}
	ports, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0") // the kernel's: above 32767
	if err != nil {
		t.Fatal(err)
	}
	ports.FrontendMembership = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if ports.FrontendMembership <= 32767 {
		t.Skipf("the kernel gave port %d, not above 32767", ports.FrontendMembership)
	}
	_, err = Start(t.Context(), Options{Dir: t.TempDir(), Ports: &ports})
	if err == nil || !strings.Contains(err.Error(), "the Temporal server exited") || !strings.Contains(err.Error(), "smallint") {
		t.Fatalf("Start: %v; want the server's exit, out of range for type smallint", err)
	}
	for _, p := range ports.list() {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)))
		if err != nil {
			t.Errorf("port %d (%s) is still in use after the failed start: %v", p.port, p.name, err)
			continue
		}
		l.Close()
	}
}
