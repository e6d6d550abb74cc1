package agentruntest

import (
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/agentrun/agentrun/workflows"
)

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// RunID is the workflow id of the recorded run: the ids of its child
	// runs derive from it. Default: the file's name without ".json", as
	// `temporal workflow show -w RUN --output json > RUN.json` names it.
	RunID string
	// DataConverter decodes the history's payloads (a codec's, when the
	// runs were encrypted). Default: the sdk's.
	DataConverter converter.DataConverter
}

// Replay replays the history in file (temporal workflow show --output
// json) of an agent run against the agent-run workflow as it is now, and
// fails the test when the code no longer makes the commands the history
// recorded: a change that would break the runs in flight when it is
// deployed. Only the workflow replays; no model or tool is called, so no
// Config is needed.
func Replay(t testing.TB, file string, opts ReplayOptions) {
	t.Helper()
	id := opts.RunID
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(file), ".json")
	}
	if err := workflows.ReplayFile(file, id, worker.WorkflowReplayerOptions{DataConverter: opts.DataConverter}); err != nil {
		t.Fatalf("agentruntest.Replay %s: %v", file, err)
	}
}
