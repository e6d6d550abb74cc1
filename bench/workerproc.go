package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workerReadyTimeout bounds a worker process's start: connecting to the dev
// server and checking the search attributes.
const workerReadyTimeout = 30 * time.Second

// workerStopTimeout bounds a graceful stop (SIGTERM) before SIGKILL.
const workerStopTimeout = 20 * time.Second

// buildWorker builds the worker program (cmd worker) into dir and returns
// its path.
func buildWorker(ctx context.Context, dir string) (string, error) {
	path := filepath.Join(dir, "worker")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/agentrun/agentrun/worker").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build worker: %v: %s", err, bytes.TrimSpace(out))
	}
	return path, nil
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

// workerProc is a worker process; it keeps the tail of its log.
type workerProc struct {
	cmd   *exec.Cmd
	done  chan struct{}
	mu    sync.Mutex
	tail  []byte
	ready bool
}

// maxTail is how much of a worker's log is kept for error messages.
const maxTail = 16 << 10

func (w *workerProc) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("worker started")) {
		w.ready = true
	}
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*maxTail {
		w.tail = append([]byte(nil), w.tail[len(w.tail)-maxTail:]...)
	}
	return len(p), nil
}

func (w *workerProc) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lastLines(w.tail, 1500)
}

// startWorker starts the worker program and waits until it logs "worker
// started".
func startWorker(ctx context.Context, path string, env []string) (*workerProc, error) {
	w := &workerProc{cmd: exec.Command(path), done: make(chan struct{})}
	w.cmd.Env, w.cmd.Stdout, w.cmd.Stderr = env, w, w
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	deadline := time.Now().Add(workerReadyTimeout)
	for {
		w.mu.Lock()
		ready := w.ready
		w.mu.Unlock()
		switch {
		case ready:
			return w, nil
		case !w.running():
			return nil, fmt.Errorf("worker exited at start: %s", w.log())
		case time.Now().After(deadline) || ctx.Err() != nil:
			w.kill()
			return nil, fmt.Errorf("worker not started within %v: %s", workerReadyTimeout, w.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *workerProc) pid() int { return w.cmd.Process.Pid }

func (w *workerProc) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to end.
func (w *workerProc) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// stop asks the worker to stop (SIGTERM) and kills it after
// workerStopTimeout.
func (w *workerProc) stop() {
	if !w.running() {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(workerStopTimeout):
		w.kill()
	}
}

// rss returns the process's resident set (VmRSS) in bytes.
func (w *workerProc) rss() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.pid()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", w.pid())
}

// lastLines returns the end of a log, at most n bytes, on one line.
func lastLines(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.Join(strings.Fields(s), " ")
}
