package fence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentrun/agentrun/operator"
)

// Grace is how long after an attempt's deadline a later attempt still
// treats it as able to act. The deadline is the holder's own clock plus
// its tool's timeout, and the later attempt reads it on another host's
// clock: NTP keeps hosts within tens of milliseconds, so 2 s covers a
// clock that was stepped, the holder's timer firing late on a loaded host,
// and the moment between a tool's last check of its context and its write
// (the demo's fsync). A tool frozen longer than that inside its write,
// after checking its context, is beyond any fence: give such a tool an
// idempotency key.
const Grace = 2 * time.Second

// Attempt is who runs a write and until when: its step.started record
// carries it, and the attempt that recorded the newest start of a step
// holds the step (the fence). The holder starts its effect only before
// Deadline, and a later attempt neither probes nor runs the write again
// before Deadline plus Grace.
type Attempt struct {
	// Generation counts the executions of the step: 1, then one more for
	// each retry a person asked for.
	Generation int `json:"generation,omitempty"`
	// Number is the engine's attempt: Temporal's activity attempt, or 1 on
	// the local engine.
	Number int `json:"number,omitempty"`
	// Worker names the process: a Temporal worker's identity, or the
	// local driver's pid@host.
	Worker string `json:"worker,omitempty"`
	// Deadline is the attempt's start plus its tool's timeout: the attempt
	// starts no effect after it, and its tool's context ends then.
	Deadline time.Time `json:"deadline,omitzero"`
	// Host and PID name the attempt's process for a liveness check (Gone):
	// the host's identity (ThisHost) and the pid.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// bootIDFile holds the kernel's boot id: a random UUID drawn at every
// boot, so two machines (cloned VMs included) never share one, and a
// machine that rebooted is a new host whose old pids are all gone.
var bootIDFile = "/proc/sys/kernel/random/boot_id"

// ThisHost names this process's host for Attempt.Host: its host name, its
// pid namespace (two containers that share a host name are told apart)
// and the kernel's boot id (two machines that share a host name, and the
// initial pid namespace's inode, which is the same on every Linux host,
// are told apart). Empty when the boot id cannot be read: such a host
// judges no attempt Gone, and no other host judges its attempts Gone.
var ThisHost = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	boot, err := os.ReadFile(bootIDFile)
	return hostIdentity(host, ns, strings.TrimSpace(string(boot)), err)
})

// hostIdentity is ThisHost's form: "NAME/PIDNS/boot:ID", or "" without
// each of the three.
func hostIdentity(name, pidns, boot string, err error) string {
	if err != nil || name == "" || pidns == "" || boot == "" {
		return ""
	}
	return name + "/" + pidns + "/boot:" + boot
}

// Here fills in the attempt's Worker (pid@host, unless set), Host and PID
// with this process's.
func (a Attempt) Here() Attempt {
	host, _ := os.Hostname()
	a.Host, a.PID = ThisHost(), os.Getpid()
	if a.Worker == "" {
		a.Worker = strconv.Itoa(a.PID) + "@" + host
	}
	return a
}

// Gone reports whether the attempt's process certainly ended: it ran on
// this host (the same host name, pid namespace and boot) and its pid is no
// longer a process. A process that ended cannot act, so its fence is void
// (a driver killed on this host, a worker SIGKILLed beside its fleet). An
// attempt from any other host, from a host whose identity is unknown, or
// recorded before the boot id was part of it, is never Gone: it keeps the
// fence until its deadline. A pid taken again by another process only
// keeps the fence until its deadline too.
func (a *Attempt) Gone() bool {
	this := ThisHost()
	if a == nil || a.PID <= 0 || this == "" || a.Host != this || a.PID == os.Getpid() {
		return false
	}
	if errors.Is(syscall.Kill(a.PID, 0), syscall.ESRCH) {
		return true
	}
	return zombie(a.PID)
}

// zombie reports whether pid is a process that ended and was not yet
// reaped by its parent (state Z in /proc/PID/stat): it cannot act.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// Until is when a later attempt may act on the step: Deadline plus Grace;
// zero for a start recorded without a deadline (journals from before the
// fence), which holds nothing.
func (a *Attempt) Until() time.Time {
	if a == nil || a.Deadline.IsZero() {
		return time.Time{}
	}
	return a.Deadline.Add(Grace)
}

// Holds reports whether the attempt may still act at now: before Until,
// and its process is not Gone.
func (a *Attempt) Holds(now time.Time) bool {
	u := a.Until()
	return !u.IsZero() && now.Before(u) && !a.Gone()
}

// String names the attempt for people: "attempt 1 (worker 123@host)".
func (a *Attempt) String() string {
	if a == nil {
		return "an earlier attempt"
	}
	s := fmt.Sprintf("attempt %d", max(a.Number, 1))
	if a.Generation > 1 {
		s += fmt.Sprintf(" of execution %d", a.Generation)
	}
	if a.Worker != "" {
		s += " (worker " + a.Worker + ")"
	}
	return s
}

// MayRun says, in one line, that the attempt may still be running and
// until when: "attempt 1 (worker 123@host) may still be running until
// 14:03:10 UTC".
func (a *Attempt) MayRun() string {
	return fmt.Sprintf("%s may still be running until %s", a, operator.FormatUntil(a.Until()))
}

// ErrFenced: an earlier attempt of a write may still be running; nothing
// was probed, run or written.
var ErrFenced = errors.New("an earlier attempt may still be running")

// ErrLost: the attempt no longer holds its write (its deadline passed,
// or a later attempt took the step); the tool did not run.
var ErrLost = errors.New("the attempt no longer holds the write")

// ErrDeadline is the cause of a fenced write's context ending at its
// deadline: the tool may or may not have acted.
var ErrDeadline = errors.New("the attempt's deadline passed")

// Error says which earlier attempt of a write may still be running,
// and from when a later attempt may act. It unwraps to ErrFenced.
type Error struct {
	Step   string
	Holder Attempt
}

func (e *Error) Error() string {
	return fmt.Sprintf("step %s: %s; nothing runs before then", e.Step, e.Holder.MayRun())
}

// Unwrap returns ErrFenced.
func (e *Error) Unwrap() error { return ErrFenced }

// Until is when a later attempt may act.
func (e *Error) Until() time.Time { return e.Holder.Until() }
