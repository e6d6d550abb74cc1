package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startProgram runs the program as a child process listening on a free
// loopback port, with keys and a journal folder, and returns its endpoint
// and process id once it answers.
func startProgram(t *testing.T) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CODECSERVER_TEST_MAIN=1", "AGENTRUN_CODEC_ADDR="+addr, "AGENTRUN_CODEC_TOKEN=",
		"AGENTRUN_CODEC_KEYS=k1:"+key, "AGENTRUN_JOURNAL="+t.TempDir())
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		cmd.Wait()         //nolint:errcheck // killed
		if t.Failed() {
			t.Logf("codecserver:\n%s", logs.Bytes())
		}
	})
	endpoint := "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Post(endpoint+"/decode", "application/json", strings.NewReader(`{"payloads":[]}`)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint, cmd.Process.Pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the codec server did not answer within 20 s")
		}
	}
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestManyEmptyPayloadsRefused: the program sent one /decode of 64 MiB
// of empty payloads (22 million of them, 3 bytes each) refuses it (413,
// one line naming MaxPayloads) with its peak RSS under 1 GiB; before the
// count was bounded it built and answered them all, peaking at 3.3 GB.
func TestManyEmptyPayloadsRefused(t *testing.T) {
	endpoint, pid := startProgram(t)
	n := (64<<20 - len(`{"payloads":[]}`)) / 3
	body := `{"payloads":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}`
	client := &http.Client{Timeout: 3 * time.Minute}
	code, text := 0, ""
	if resp, err := client.Post(endpoint+"/decode", "application/json", strings.NewReader(body)); err != nil {
		text = err.Error()
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		code, text = resp.StatusCode, string(b)
	}
	peak := peakRSS(t, pid)
	t.Logf("%d empty payloads: %d %q; peak RSS %d MiB", n, code, text, peak>>20)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(text, "(MaxPayloads)") ||
		strings.Count(strings.TrimSuffix(text, "\n"), "\n") > 0 {
		t.Errorf("%d empty payloads: %d %.200q, want 413 and one line naming MaxPayloads", n, code, text)
	}
	if peak >= 1<<30 {
		t.Errorf("the codec server's peak RSS is %d MiB, want under 1 GiB", peak>>20)
	}
}
