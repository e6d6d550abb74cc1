package testenv

import (
	"bytes"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a child process whose output is kept for failure messages.
type Proc struct {
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output returns what the process printed so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
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
	p := &Proc{Cmd: exec.Command(path, args...), done: make(chan struct{})}
	p.Cmd.Dir, p.Cmd.Env, p.Cmd.Stdout, p.Cmd.Stderr = dir, env, p, p
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.Running() {
			_ = p.Cmd.Process.Kill()
			<-p.done
		}
	})
	return p
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

// Kill sends SIGKILL and waits for the process to end.
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
