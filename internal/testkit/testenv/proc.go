package testenv

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a child process whose output is kept, for failure messages and
// for waiting on what it logs: the one child-process harness of the
// tests, the bench, the chaos campaign and the harnesses (clustertest's
// server and Web UI). Launch and LaunchCmd start one from a program; Start
// and Run from a test, which kills it at cleanup.
type Proc struct {
	Cmd  *exec.Cmd
	keep int // 0: keep all the output; else about its last keep bytes
	mu   sync.Mutex
	out  []byte
	done chan struct{}
	err  error
}

// WorkerReadyTimeout bounds a worker process's start in StartWorker:
// connecting to the dev server (and PostgreSQL) and checking the search
// attributes.
const WorkerReadyTimeout = 30 * time.Second

// tailBytes is how much of a log Tail returns.
const tailBytes = 1500

// Launch starts the program path with args in dir ("" for the current
// folder) with env. It keeps the whole output when keep is 0, else about
// its last keep bytes (for long-lived processes).
func Launch(dir string, env []string, keep int, path string, args ...string) (*Proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	return LaunchCmd(cmd, keep)
}

// LaunchCmd starts cmd as the caller prepared it (its folder, environment,
// SysProcAttr, a log file as its output). The output it does not send
// elsewhere (cmd.Stdout or cmd.Stderr nil) goes to p, which keeps it as
// Launch does.
func LaunchCmd(cmd *exec.Cmd, keep int) (*Proc, error) {
	p := &Proc{Cmd: cmd, keep: keep, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = p
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// StartWorker launches the worker program path and waits until it logs
// "worker started", for at most WorkerReadyTimeout.
func StartWorker(ctx context.Context, dir string, env []string, keep int, path string) (*Proc, error) {
	p, err := Launch(dir, env, keep, path)
	if err != nil {
		return nil, err
	}
	if err := p.WaitLogged(ctx, "worker started", WorkerReadyTimeout); err != nil {
		p.Stop(0)
		return nil, fmt.Errorf("worker: %w", err)
	}
	return p, nil
}

func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = append(p.out, b...)
	if p.keep > 0 && len(p.out) > 2*p.keep {
		p.out = append([]byte(nil), p.out[len(p.out)-p.keep:]...)
	}
	return len(b), nil
}

// Output returns what the process printed so far (what is kept of it).
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.out)
}

// Logged reports whether the kept output holds s.
func (p *Proc) Logged(s string) bool { return strings.Contains(p.Output(), s) }

// Tail returns the end of the output on one line, for error messages.
func (p *Proc) Tail() string { return Tail(p.Output()) }

// Tail returns the end of a log, at most 1500 bytes, on one line.
func Tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > tailBytes {
		s = "..." + s[len(s)-tailBytes:]
	}
	return strings.Join(strings.Fields(s), " ")
}

// WaitLogged polls the output every 20ms until it holds s. It fails when
// the process exits first, after timeout, or when ctx ends.
func (p *Proc) WaitLogged(ctx context.Context, s string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !p.Logged(s) {
		switch {
		case !p.Running():
			return fmt.Errorf("%s exited before logging %q: %s", p.Cmd.Path, s, p.Tail())
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Errorf("%s did not log %q within %v: %s", p.Cmd.Path, s, timeout, p.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Err waits for the process to exit and returns how it ended: nil for
// exit code 0, else an *exec.ExitError.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig (SIGSTOP, SIGCONT, ...) to the process.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := p.Cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to %d: %w", sig, p.Pid(), err)
	}
	return nil
}

// Stop asks the process to stop (SIGTERM), waits up to grace, then sends
// SIGKILL; with grace 0 it sends SIGKILL at once. It returns once the
// process has ended. On a nil p it does nothing.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || !p.Running() {
		return
	}
	if grace > 0 {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
	}
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// ExitCode waits for the process to end and returns its exit code (-1
// when a signal ended it).
func (p *Proc) ExitCode() int {
	<-p.done
	return p.Cmd.ProcessState.ExitCode()
}

// Start starts a program with env; the test kills it at cleanup if it
// still runs.
func Start(t testing.TB, env []string, path string, args ...string) *Proc {
	t.Helper()
	return StartIn(t, "", env, path, args...)
}

// StartIn is Start with the working folder dir ("" for the test's own).
func StartIn(t testing.TB, dir string, env []string, path string, args ...string) *Proc {
	t.Helper()
	p, err := Launch(dir, env, 0, path, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

// Kill sends SIGKILL and waits for the process to end; the test fails
// when the process had ended already.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", p.Cmd.Process.Pid, err)
	}
	<-p.done
}

// Wait waits for the process to exit and returns its exit code.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v:\n%s", p.Cmd.Path, timeout, p.Output())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.Cmd.Path, p.err)
	}
	return 0
}

// Run runs a program to its end and returns its exit code and output.
func Run(t testing.TB, env []string, timeout time.Duration, path string, args ...string) (int, string) {
	t.Helper()
	return RunIn(t, "", env, timeout, path, args...)
}

// RunIn is Run with the working folder dir ("" for the test's own).
func RunIn(t testing.TB, dir string, env []string, timeout time.Duration, path string, args ...string) (int, string) {
	t.Helper()
	p := StartIn(t, dir, env, path, args...)
	code := p.Wait(t, timeout)
	return code, p.Output()
}

// RunTool runs a program in dir to its end within timeout and returns its
// combined output; an error names the command and the output's tail.
func RunTool(ctx context.Context, dir string, env []string, timeout time.Duration, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", path, strings.Join(args, " "), err, Tail(string(out)))
	}
	return string(out), nil
}
