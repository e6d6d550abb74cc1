package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestShowPrintsWhatUnblocksLocal: reconcile --local show prints, for a
// run awaiting approval, the commands that approve, deny and resume it,
// naming the programs as they were invoked; pasted into a shell they work
// as printed, and the run completes with one ticket.
func TestShowPrintsWhatUnblocksLocal(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", prompt); code != 3 {
		t.Fatalf("run: exit %d, want 3\n%s", code, out)
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1")
	approve := reconcile + " --local approve r1 " + ticketStep
	for _, want := range []string{
		"run r1: AwaitingApproval (4 records)\n  marker " + ticketStep + "\n    tool: create_ticket\n",
		"    approve: " + approve + "\n",
		"    deny:    " + reconcile + " --local deny r1 " + ticketStep + " REASON\n",
		"  then resume the run: " + starter + " --local --id r1\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	resume := regexp.MustCompile(`then resume the run: (.*)`).FindStringSubmatch(out)[1]
	for _, line := range []string{approve, resume} {
		cmd := exec.CommandContext(t.Context(), "sh", "-c", line)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the printed command %s: %v\n%s", line, err, b)
		}
		if line == resume && !strings.Contains(string(b), "Your request is filed as TICKET-1") {
			t.Fatalf("resume: %s", b)
		}
	}
}
