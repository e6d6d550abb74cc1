package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The CPU time of this process and of the dev server it started, which
// the saturation section reads over each round.

// processCPU returns the user + system CPU time this process has used
// (getrusage RUSAGE_SELF: every thread, not the dev server, a child).
func processCPU() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}

// cpuTimes returns the CPU time this process has used (processCPU) and
// the process server has (pidCPU: 0 for pid 0).
func cpuTimes(server int) (self, srv time.Duration, err error) {
	if self, err = processCPU(); err != nil {
		return 0, 0, err
	}
	srv, err = pidCPU(server)
	return self, srv, err
}

// clockTick is the unit of /proc/PID/stat's CPU times, USER_HZ: 100 a
// second on every Linux the bench runs on (sysconf(_SC_CLK_TCK)).
const clockTick = 10 * time.Millisecond

// devServerPID returns the pid of the dev server at hostPort when this
// process started it (a child whose command line has --port PORT, as
// testsuite.StartDevServer starts it), or 0.
func devServerPID(hostPort string) int {
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return 0
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		f, err := statFields(path)
		if err != nil || len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) { // f[1]: the parent's pid
			continue
		}
		dir := filepath.Dir(path)
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err == nil && strings.Contains(string(cmd), "\x00--port\x00"+port+"\x00") {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			return pid
		}
	}
	return 0
}

// pidCPU returns the user + system CPU time the process pid has used
// (/proc/PID/stat, in clock ticks); 0 for pid 0.
func pidCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	f, err := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want 13 or more", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q: want clock ticks", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// statFields returns the fields of a /proc/PID/stat file after the
// command's name (which may hold spaces): state, ppid, ... (proc(5)'s
// fields 3 on, so utime, field 14, is index 11).
func statFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: no command name", path)
	}
	return strings.Fields(string(b[i+1:])), nil
}
