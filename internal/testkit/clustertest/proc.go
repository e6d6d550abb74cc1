package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The cluster's children: the deploy scripts run to their end, the long-running
// programs started and stopped, and the ends of their logs.

// proc is a child process and the channel closed when it exits.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// script runs one of the deploy scripts with the cluster's environment,
// its output in the log file name; an error carries the log's end.
func (c *Cluster) script(ctx context.Context, script, log string) error {
	f, err := os.Create(filepath.Join(c.opts.Dir, log))
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(c.opts.Root, script))
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = c.env, f, f, c.opts.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", script, err, c.logTail(log))
	}
	return nil
}

// start starts a long-running child, its output appended to the log file
// name.
func (c *Cluster) start(log string, name string, args ...string) (*proc, error) {
	f, err := os.OpenFile(filepath.Join(c.opts.Dir, log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = c.env, f, f, c.opts.Dir
	// The child dies with the process that started it (a test binary
	// killed at its timeout, make cluster's supervisor killed).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM and waits up to stopTimeout, then kills.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail is the end of a log file of the cluster, on one line.
func (c *Cluster) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.opts.Dir, name))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	s := strings.Join(lines, " | ")
	if len(s) > 1500 {
		s = "..." + s[len(s)-1500:]
	}
	return fmt.Sprintf("%s (log %s)", s, filepath.Join(c.opts.Dir, name))
}
