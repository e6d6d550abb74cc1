package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestLaunchCmdToFile: a prepared command whose output goes to a log file
// writes it there, not to the Proc; Exited closes and Err says how it
// ended (exit 3), and Stop on an ended or nil Proc returns at once.
func TestLaunchCmdToFile(t *testing.T) {
	log := filepath.Join(t.TempDir(), "out.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo to-the-log; echo to-the-proc >&2; exit 3")
	cmd.Stdout = f
	p, err := LaunchCmd(cmd, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("sh did not exit within 30s")
	}
	var ee *exec.ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Err() = %v, want exit status 3", err)
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "to-the-log\n" {
		t.Fatalf("the log holds %q (%v), want the standard output", b, err)
	}
	if got := p.Output(); got != "to-the-proc\n" {
		t.Fatalf("Output() = %q, want the standard error only", got)
	}
	p.Stop(time.Minute)
	var none *Proc
	none.Stop(time.Minute)
}
