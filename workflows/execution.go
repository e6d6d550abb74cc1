package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/agent"
)

// InputHash is the hash of a run's input messages that a run started by
// a client keeps in its memo (MemoInputHash), so that a starter can tell
// whether an existing run has the same prompt.
func InputHash(msgs []agent.Message) string {
	b, _ := json.Marshal(msgs)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// EndedStatus names the status of a closed workflow execution: Completed,
// Failed or Cancelled, or the workflow's own status (terminated, timed
// out; ExecutionStatus). It reports false for one that is running or
// continued as new.
func EndedStatus(s enumspb.WorkflowExecutionStatus) (agent.Status, bool) {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "", false
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return agent.StatusCompleted, true
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return agent.StatusFailed, true
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return agent.StatusCancelled, true
	}
	return agent.Status(ExecutionStatus(s)), true
}

// ExecutionStatus names a workflow execution status as the Web UI does:
// "running", "terminated", "timed_out".
func ExecutionStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}
