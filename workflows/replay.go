package workflows

import (
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// ReplayFile replays the history in file (temporal workflow show --output
// json) of the run runID with AgentRun as it is now, on a replayer with
// opts (its data converter, say): an error means the
// workflow's code no longer makes the commands the history recorded. The
// run id matters: the ids of a run's child runs derive from it.
func ReplayFile(file, runID string, opts worker.WorkflowReplayerOptions) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return err
	}
	r, err := worker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		return err
	}
	r.RegisterWorkflowWithOptions(AgentRun, RegisterOptions)
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: runID}})
}
