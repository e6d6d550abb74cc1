package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// The cluster's children: the deploy scripts run to their end, the long-running
// programs started and stopped, and the ends of their logs.

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
func (c *Cluster) start(log string, name string, args ...string) (*testenv.Proc, error) {
	f, err := os.OpenFile(filepath.Join(c.opts.Dir, log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = c.env, f, f, c.opts.Dir
	// The child dies with the process that started it (a test binary
	// killed at its timeout, make cluster's supervisor killed).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return testenv.LaunchCmd(cmd, 0)
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
