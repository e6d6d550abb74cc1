package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workerReadyTimeout bounds a worker's start: connecting to the dev server
// and PostgreSQL and checking the search attributes.
const workerReadyTimeout = 30 * time.Second

// toolTimeout bounds one run of the reconcile program.
const toolTimeout = time.Minute

// proc is a worker process; it keeps its whole log (a trial's worker logs
// a few kilobytes).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

// output returns the log so far.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startProc starts bin with args in dir; its output goes to its log.
func startProc(bin, dir string, env []string, args ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = dir, env, p, p
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exitCode is the process's exit code once it ended (-1 when killed).
func (p *proc) exitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// startWorker starts the worker program in dir and waits until it logs
// "worker started".
func startWorker(ctx context.Context, bin, dir string, env []string) (*proc, error) {
	p, err := startProc(bin, dir, env)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(workerReadyTimeout)
	for !strings.Contains(p.output(), "worker started") {
		switch {
		case !p.running():
			return nil, fmt.Errorf("worker exited at start: %s", tail(p.output()))
		case time.Now().After(deadline) || ctx.Err() != nil:
			p.kill()
			return nil, fmt.Errorf("worker not started within %v: %s", workerReadyTimeout, tail(p.output()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig (SIGSTOP, SIGCONT) to the process.
func (p *proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to worker %d: %w", sig, p.pid(), err)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// runTool runs the reconcile program in dir and returns its
// combined output.
func runTool(ctx context.Context, bin, dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, tail(string(out)))
	}
	return string(out), nil
}

// tail returns the end of a log on one line.
func tail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	return s
}
