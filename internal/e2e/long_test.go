package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// TestLongRunOnDevServer: a 300-turn run whose model calls the everything
// server's echo with 4 KB each turn (the shape that got runs terminated
// near turn 110 when every model step carried the whole conversation)
// completes on a real worker, continuing as new on the way; every CallModel
// input stays at most 2 KiB and the history at most 10 KiB per turn across
// the whole chain of executions. The starter, attached with --wait, follows
// the run to its answer across the switches.
func TestLongRunOnDevServer(t *testing.T) {
	t.Parallel()
	const turns, size = 300, 4096
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	var script struct {
		Turns []map[string]any `json:"turns"`
	}
	for i := 1; i < turns; i++ {
		msg := fmt.Sprintf("turn %04d ", i) + strings.Repeat(string(rune('a'+i%26)), size-10)
		script.Turns = append(script.Turns, map[string]any{"tool_calls": []any{map[string]any{"name": "echo", "args": map[string]string{"message": msg}}}})
	}
	script.Turns = append(script.Turns, map[string]any{"text": "Last echo had {{last_tool_result}}"})
	env := f.env(echoSettings(t, f, script)...)
	testenv.Start(t, env, testenv.Program(t, "worker"))

	const run = "e2e-long"
	in := workflows.Input{Messages: agent.UserMessages("Echo everything."), MaxTurns: turns + 10, ContinueAfter: 250}
	if _, err := srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: run, TaskQueue: f.queue}, workflows.WorkflowName, in); err != nil {
		t.Fatal(err)
	}
	code, out := testenv.Run(t, env, 10*time.Minute, testenv.Program(t, "starter"), "--id", run, "--wait")
	if code != 0 || !strings.Contains(out, "Last echo had Echo: turn 0299 ") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}

	// Walk the chain of executions back from the newest.
	var (
		runs, events, maxInput, models int
		bytes, maxCarried, maxStream   int
	)
	for runID := ""; ; runs++ {
		it := srv.Client.GetWorkflowHistory(t.Context(), run, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var first *historypb.HistoryEvent
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = e
			}
			events++
			bytes += proto.Size(e)
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
				models++
				n := 0
				for _, p := range a.GetInput().GetPayloads() {
					n += len(p.GetData())
				}
				maxInput = max(maxInput, n)
			}
		}
		started := first.GetWorkflowExecutionStartedEventAttributes()
		if started.GetContinuedExecutionRunId() != "" {
			// The checkpoint, and apart from it the run's stream (its own
			// bound: the newest events, for subscribers).
			var in workflows.Input
			if err := testenv.SuiteConverter(t).FromPayloads(started.GetInput(), &in); err != nil || in.Continued == nil {
				t.Fatalf("continued input: %v", err)
			}
			stream, _ := json.Marshal(in.Continued.Stream)
			in.Continued.Stream = nil
			cp, _ := json.Marshal(in)
			maxCarried, maxStream = max(maxCarried, len(cp)), max(maxStream, len(stream))
		}
		runID = started.GetContinuedExecutionRunId()
		if runID == "" {
			break
		}
	}
	perTurn := bytes / turns
	t.Logf("%d turns in %d executions: %d events, %d history bytes (%d per turn), largest CallModel input %d bytes, largest checkpoint carried %d bytes and stream %d bytes", turns, runs+1, events, bytes, perTurn, maxInput, maxCarried, maxStream)
	if models != turns {
		t.Fatalf("CallModel activities: %d, want %d", models, turns)
	}
	if runs < 1 {
		t.Fatalf("the run never continued as new (ContinueAfter 250 steps, %d steps)", 2*turns-1)
	}
	if maxInput > 2048 {
		t.Fatalf("largest CallModel input: %d bytes, want at most 2 KiB", maxInput)
	}
	if maxCarried == 0 || maxCarried > 64<<10 {
		t.Fatalf("largest checkpoint carried across continue-as-new: %d bytes, want some and at most 64 KiB", maxCarried)
	}
	if maxStream == 0 || maxStream > 48<<10 {
		t.Fatalf("largest stream carried across continue-as-new: %d bytes of JSON, want some and at most 48 KiB (32 KiB of items)", maxStream)
	}
	if perTurn > 10<<10 {
		t.Fatalf("history: %d bytes per turn, want at most 10 KiB", perTurn)
	}
	// The words behind the references, from an earlier execution.
	reconcile := testenv.Program(t, "reconcile")
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", "tool/7/0/echo")
	want7 := "turn 0007 " + strings.Repeat("h", size-10)
	if code != 0 || !strings.Contains(out, `input: echo({"message":"`+want7+`"})`) || !strings.Contains(out, "output:\nEcho: "+want7) {
		t.Fatalf("reconcile show --step tool/7/0/echo: exit %d\n%.600s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", "llm/8")
	if code != 0 || !strings.Contains(out, "input: 15 messages (14 before the step, 1 new)") || !strings.Contains(out, "--- 15. tool tool/7/0/echo\nEcho: "+want7) {
		t.Fatalf("reconcile show --step llm/8: exit %d\n%.600s", code, out)
	}
	var st workflows.State
	v, err := srv.Client.QueryWorkflow(t.Context(), run, "", workflows.QueryState)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil || st.StepCount != 2*turns-1 || st.Runs != runs || len(st.Steps) != workflows.MaxSteps {
		t.Fatalf("state: %v, steps %d (listed %d), executions before %d; want %d steps, %d", err, st.StepCount, len(st.Steps), st.Runs, 2*turns-1, runs)
	}
}

// echoSettings writes a tools file offering only the everything MCP
// server's echo (a read) and the scripted model's script into the fleet's
// folder, and returns the settings that name them.
func echoSettings(t *testing.T, f *fleet, script any) []string {
	t.Helper()
	cfg := map[string]any{
		"demo":    map[string]bool{"lookup": false, "create_ticket": false},
		"servers": []any{map[string]any{"name": "everything", "command": mcptest.Bin(t, mcptest.Everything)}},
		"tools":   map[string]any{"echo": map[string]string{"kind": "read"}},
	}
	toolsFile, scriptFile := filepath.Join(f.dir, "tools.json"), filepath.Join(f.dir, "script.json")
	for file, v := range map[string]any{toolsFile: cfg, scriptFile: script} {
		if err := os.WriteFile(file, []byte(testenv.MustJSON(v)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"AGENTRUN_TOOLS=" + toolsFile, "AGENTRUN_MODEL=scripted:" + scriptFile}
}
