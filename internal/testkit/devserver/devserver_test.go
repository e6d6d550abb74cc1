package devserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/testkit"
)

// TestDemoServerIsTuned checks that the dev server of make demo and make
// dev-server starts with DynamicConfig too.
func TestDemoServerIsTuned(t *testing.T) {
	script := filepath.Join(testkit.Root(), "scripts", "dev-server.sh")
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range DynamicConfig {
		if flag := "--dynamic-config-value " + s.Key + "=" + s.Value; !strings.Contains(string(b), flag) {
			t.Errorf("%s does not start the server with %s", script, flag)
		}
	}
}

// TestRestartOnFile: a server started on a file database and stopped comes
// back on the same file and port with its runs.
func TestRestartOnFile(t *testing.T) {
	cli, err := CLI()
	if err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Port: port, DBFile: filepath.Join(t.TempDir(), "temporal.db")}
	dev, err := StartWith(t.Context(), cli, os.Stderr, opts)
	if err != nil {
		testkit.Unavailable(t, "Temporal dev server", err)
	}
	if _, err := dev.Client().ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "survivor", TaskQueue: "nobody"}, "NoSuchWorkflow"); err != nil {
		t.Fatal(err)
	}
	dev.Client().Close()
	if err := dev.Stop(); err != nil {
		t.Logf("stop: %v", err) // an interrupted server may exit non-zero
	}
	dev, err = StartWith(t.Context(), cli, os.Stderr, opts)
	if err != nil {
		t.Fatalf("restart on %s: %v", opts.DBFile, err)
	}
	defer func() { dev.Client().Close(); _ = dev.Stop() }()
	if got := dev.FrontendHostPort(); got != "127.0.0.1:"+port {
		t.Errorf("restarted on %s, want port %s", got, port)
	}
	desc, err := dev.Client().DescribeWorkflow(t.Context(), "survivor", "")
	if err != nil {
		t.Fatalf("the run did not survive the restart: %v", err)
	}
	if st := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus().String(); st != "Running" {
		t.Errorf("survivor is %s, want Running", st)
	}
}
