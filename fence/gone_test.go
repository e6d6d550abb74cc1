package fence_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/agentrun/agentrun/fence"
)

// TestGoneZombie: a process that ended and was not reaped yet holds
// nothing; a live one does.
func TestGoneZombie(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait() //nolint:errcheck
	a := fence.Attempt{}.Here()
	a.PID = cmd.Process.Pid
	if a.Gone() {
		t.Fatal("a live process is Gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !a.Gone() {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped process is not Gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
