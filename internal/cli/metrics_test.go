package cli_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/internal/testenv"
)

// TestMetricsSetting: AGENTRUN_METRICS is a listen address or unset (off);
// anything else is a one-line error naming the setting and an example.
func TestMetricsSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, want string
		ok          bool
	}{
		{"", "", true},
		{":9464", ":9464", true},
		{" 127.0.0.1:9464 ", "127.0.0.1:9464", true},
		{"[::1]:9464", "[::1]:9464", true},
		{"9464", "", false},
		{"127.0.0.1", "", false},
		{":0", "", false},
		{":99999", "", false},
		{"localhost:metrics", "", false},
		{"http://localhost:9464", "", false},
	} {
		env := map[string]string{"AGENTRUN_METRICS": tc.value}
		s, err := cli.LoadSettings(func(k string) string { return env[k] })
		switch {
		case tc.ok && (err != nil || s.Metrics != tc.want):
			t.Errorf("AGENTRUN_METRICS=%q: Metrics %q, %v; want %q", tc.value, s.Metrics, err, tc.want)
		case !tc.ok && err == nil:
			t.Errorf("AGENTRUN_METRICS=%q: no error", tc.value)
		case !tc.ok && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "AGENTRUN_METRICS") || !strings.Contains(err.Error(), ":9464")):
			t.Errorf("AGENTRUN_METRICS=%q: error %q, want one line naming the setting with an example", tc.value, err)
		}
	}
}

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
