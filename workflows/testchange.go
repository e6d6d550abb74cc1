package workflows

import (
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/workflow"
)

// envTestWorkflowChange selects a test-only change to AgentRun; production
// never sets it. When a worker's environment has
// AGENTRUN_TEST_WORKFLOW_CHANGE=1, every AgentRun execution on that worker
// starts with a 1 ms timer before anything else: a different command
// sequence, so that worker fails with a non-determinism error on the
// history of a run started without it. The Worker Versioning test runs
// "build B" with it to prove that runs pinned to build A never reach B.
const envTestWorkflowChange = "AGENTRUN_TEST_WORKFLOW_CHANGE"

// testWorkflowChange is envTestWorkflowChange, read once per process (so
// it is the same on every replay in that worker).
var testWorkflowChange = sync.OnceValue(func() bool { return os.Getenv(envTestWorkflowChange) == "1" })

// applyTestChange is the change envTestWorkflowChange selects, or nothing
// (the production case).
func applyTestChange(ctx workflow.Context) error {
	if !testWorkflowChange() {
		return nil
	}
	return workflow.Sleep(ctx, time.Millisecond)
}
