package fence

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestGoneNeedsTheSameBoot: a machine cloned from this one keeps its host
// name, and the initial pid namespace has the same inode on every Linux
// host, so only the boot id tells the two apart. An attempt recorded there
// whose pid is not a process here is not Gone: it may be running on the
// other machine. The same attempt recorded on this host is Gone.
func TestGoneNeedsTheSameBoot(t *testing.T) {
	this := ThisHost()
	if this == "" {
		t.Fatalf("ThisHost is empty: %s not readable on this Linux host", bootIDFile)
	}
	name, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	boot, err := os.ReadFile(bootIDFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := this, name+"/"+ns+"/boot:"+strings.TrimSpace(string(boot)); got != want {
		t.Fatalf("ThisHost = %q, want %q", got, want)
	}

	// A pid that certainly ended: a child started, killed and reaped.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	clone := hostIdentity(name, ns, "00000000-0000-4000-8000-000000000000", nil)
	for _, c := range []struct {
		what string
		host string
		gone bool
	}{
		{"this host", this, true},
		{"a clone: same host name and pid namespace, another boot", clone, false},
		{"this host before the boot id (name/pidns)", name + "/" + ns, false},
		{"an unknown host", "", false},
		{"another host name", "other/" + ns + "/boot:" + strings.TrimSpace(string(boot)), false},
	} {
		a := &Attempt{Host: c.host, PID: pid, Worker: "w"}
		if got := a.Gone(); got != c.gone {
			t.Errorf("%s (%q): Gone = %v, want %v", c.what, c.host, got, c.gone)
		}
	}
}

// TestHostIdentityUnknown: without a boot id (not Linux, /proc not
// mounted) the host has no identity, so it judges nothing Gone.
func TestHostIdentityUnknown(t *testing.T) {
	for _, c := range []struct {
		name, ns, boot string
		err            error
	}{
		{"h", "pid:[1]", "", nil},
		{"h", "pid:[1]", "b", errors.New("no /proc")},
		{"h", "", "b", nil},
		{"", "pid:[1]", "b", nil},
	} {
		if got := hostIdentity(c.name, c.ns, c.boot, c.err); got != "" {
			t.Errorf("hostIdentity(%q, %q, %q, %v) = %q, want empty", c.name, c.ns, c.boot, c.err, got)
		}
	}
}
