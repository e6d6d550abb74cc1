package wfchange

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/workflows"
)

// TestChangeBreaksReplay: the test-only change of
// AGENTRUN_TEST_WORKFLOW_CHANGE really is a breaking change: with it, every
// committed history fails to replay with a non-determinism error (so the
// Worker Versioning test's build B would fail any run of build A it
// received); without it (as production registers) they replay.
func TestChangeBreaksReplay(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"hand-signals.json", "continue-as-new-1.json"} {
		f = "../../../workflows/testdata/" + f
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Workflow(false), workflows.RegisterOptions)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("replay %s without the test change: %v", f, err)
		}
		r = worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Workflow(true), workflows.RegisterOptions)
		err := r.ReplayWorkflowHistoryFromJSONFile(nil, f)
		if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Errorf("replay %s with AGENTRUN_TEST_WORKFLOW_CHANGE=1: %v; want a non-determinism error (TMPRL1100)", f, err)
		}
	}
}
