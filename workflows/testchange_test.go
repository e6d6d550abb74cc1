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
// received); without it (the zero Test, as production registers) they
// replay.
func TestTestChangeBreaksReplay(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"testdata/hand-signals.json", "testdata/continue-as-new-1.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Workflow(Test{}), RegisterOptions)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("replay %s without the test change: %v", f, err)
		}
		r = worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Workflow(Test{WorkflowChange: true}), RegisterOptions)
		err := r.ReplayWorkflowHistoryFromJSONFile(nil, f)
		if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Errorf("replay %s with AGENTRUN_TEST_WORKFLOW_CHANGE=1: %v; want a non-determinism error (TMPRL1100)", f, err)
		}
	}
}
