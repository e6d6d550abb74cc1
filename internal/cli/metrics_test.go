package cli_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestWorkerMetricsAddressErrors: the worker refuses a malformed
// AGENTRUN_METRICS with exit 2 (a usage error) and a port already in use
// with exit 1, each with one line, before it dials Temporal.
func TestWorkerMetricsAddressErrors(t *testing.T) {
	t.Parallel()
	worker := testenv.Program(t, "worker")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		value string
		code  int
		want  string
	}{
		{"9464", 2, "AGENTRUN_METRICS"},
		{ln.Addr().String(), 1, "address already in use"},
	} {
		env := append(os.Environ(),
			"AGENTRUN_METRICS="+tc.value,
			"AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"),
			"AGENTRUN_MODEL=scripted",
			"TEMPORAL_ADDRESS=127.0.0.1:1", // never reached
		)
		code, out := testenv.Run(t, env, time.Minute, worker)
		out = strings.TrimSpace(out)
		if code != tc.code || strings.Contains(out, "\n") || !strings.Contains(out, tc.want) {
			t.Errorf("worker with AGENTRUN_METRICS=%s: exit %d, %q; want exit %d and one line with %q", tc.value, code, out, tc.code, tc.want)
		}
	}
}
