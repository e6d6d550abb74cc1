package workflows

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestTestChangeBreaksReplay: the test-only change of
// AGENTRUN_TEST_WORKFLOW_CHANGE really is a breaking change: with it, every
// committed history fails to replay with a non-determinism error (so the
// Worker Versioning test's build B would fail any run of build A it
// received). Not parallel: it swaps the hook's switch, and parallel tests
// run only after the sequential ones.
func TestTestChangeBreaksReplay(t *testing.T) {
	saved := testWorkflowChange
	testWorkflowChange = func() bool { return true }
	defer func() { testWorkflowChange = saved }()
	for _, f := range []string{"testdata/hand-signals.json", "testdata/continue-as-new-1.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(AgentRun, RegisterOptions)
		err := r.ReplayWorkflowHistoryFromJSONFile(nil, f)
		if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Errorf("replay %s with %s=1: %v; want a non-determinism error (TMPRL1100)", f, envTestWorkflowChange, err)
		}
	}
}
