package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain runs the program itself when the test binary is started with
// CODECSERVER_TEST_MAIN=1, so that a test can run it as a process.
func TestMain(m *testing.M) {
	if os.Getenv("CODECSERVER_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestRefusesWideAddressWithoutToken: the program asked to listen beyond
// loopback without AGENTRUN_CODEC_TOKEN does not start: exit 2 within
// seconds, one line naming both settings. (It used to listen.)
func TestRefusesWideAddressWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CODECSERVER_TEST_MAIN=1", "AGENTRUN_CODEC_ADDR="+addr, "AGENTRUN_CODEC_TOKEN=", "AGENTRUN_JOURNAL="+t.TempDir())
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("AGENTRUN_CODEC_ADDR=%s without a token: %v, want exit 2\n%s", addr, err, out)
		}
		text := strings.TrimSuffix(string(out), "\n")
		if strings.Contains(text, "\n") || !strings.Contains(text, "AGENTRUN_CODEC_ADDR="+addr) || !strings.Contains(text, "AGENTRUN_CODEC_TOKEN") {
			t.Fatalf("AGENTRUN_CODEC_ADDR=%s without a token said %q, want one line naming AGENTRUN_CODEC_ADDR and AGENTRUN_CODEC_TOKEN", addr, out)
		}
	}
}
