package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// workerStopTimeout bounds a graceful stop (SIGTERM) before SIGKILL.
const workerStopTimeout = 20 * time.Second

// buildWorker builds the worker program (cmd worker) into dir and returns
// its path.
func buildWorker(ctx context.Context, dir string) (string, error) {
	if err := testenv.Build(ctx, dir, "worker"); err != nil {
		return "", err
	}
	return filepath.Join(dir, "worker"), nil
}

// workerEnv is the environment of a worker process on the bench's dev
// server: queue, the journal folder and the demo delay (0: none).
func (e *benchEnv) workerEnv(queue, journalDir string, delay time.Duration) []string {
	env := append(os.Environ(),
		"TEMPORAL_ADDRESS="+e.hostPort,
		"TEMPORAL_NAMESPACE=default",
		"AGENTRUN_TASK_QUEUE="+queue,
		"AGENTRUN_JOURNAL="+journalDir,
		"AGENTRUN_TICKETS="+filepath.Join(journalDir, "tickets.jsonl"),
		"AGENTRUN_MODEL=scripted",
	)
	if delay > 0 {
		env = append(env, "AGENTRUN_DEMO_DELAY="+delay.String())
	}
	return env // on duplicates the last value wins
}

// maxTail is how much of a worker's log is kept for error messages.
const maxTail = 16 << 10

// startWorker starts the worker program and waits until it logs "worker
// started"; it keeps the tail of the worker's log.
func startWorker(ctx context.Context, path string, env []string) (*testenv.Proc, error) {
	return testenv.StartWorker(ctx, "", env, maxTail, path)
}

// rss returns the process's resident set (VmRSS) in bytes.
func rss(w *testenv.Proc) (float64, error) { return vmRSS(fmt.Sprintf("/proc/%d/status", w.Pid())) }

// vmRSS reads the resident set (VmRSS, in bytes) from a /proc status file.
func vmRSS(status string) (float64, error) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in %s", status)
}
