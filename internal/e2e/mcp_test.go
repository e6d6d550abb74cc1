package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/mcptest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// The write steps the MCP tests kill a worker in.
const (
	createStep = "tool/2/0/create_entities"
	deleteStep = "tool/2/0/delete_observations"
)

// TestMCPWriteKilledIsIndeterminate: a worker SIGKILLed after the memory
// server's create_entities (a write, not idempotent) took effect and before
// the guard recorded its result. The step becomes Indeterminate (never run
// again), is found by its search attribute, is reconciled with done through
// the temporal CLI, and the run completes with the person's result and
// exactly one entity in the memory file.
func TestMCPWriteKilledIsIndeterminate(t *testing.T) {
	t.Parallel()
	m := newMCPFleet(t, `{"turns": [
		{"tool_calls": [{"name": "read_graph"}]},
		{"tool_calls": [{"name": "create_entities", "args": {"entities": [{"name": "agentrun-e2e", "entityType": "project", "observations": ["durable agent runs"]}]}}]},
		{"text": "Stored: {{last_tool_result}}"}
	]}`)
	const run = "e2e-mcp-indeterminate"
	w1 := testenv.Start(t, m.env(holdAfter("create_entities")), testenv.Program(t, "worker"))
	m.start(t, run)

	m.waitHeld(t, w1, "create_entities")
	const entity = `{"type":"entity","name":"agentrun-e2e","entityType":"project","observations":["durable agent runs"]}`
	written := m.memory(t, entity)
	w1.Kill(t)
	testenv.Start(t, m.env(), testenv.Program(t, "worker"))

	st := waitStatus(t, m.srv, run, "Indeterminate", 2*time.Minute)
	wantWhy := createStep + " started on an earlier attempt and never recorded its result; check whether it took effect, then reconcile it (done RESULT or retry)"
	if st.Indeterminate != createStep || st.Why != wantWhy {
		t.Fatalf("indeterminate state: step %q, why %q; want %s, %q", st.Indeterminate, st.Why, createStep, wantWhy)
	}
	m.waitListed(t, run, `AgentRunStatus="Indeterminate" AND AgentRunStep="`+createStep+`"`)
	m.memory(t, entity) // still exactly one: the second attempt did not run the tool

	const result = `created entity agentrun-e2e (checked by hand in the memory file)`
	m.temporal(t, "workflow", "signal", "-w", run, "--name", "reconcile",
		"--input", testenv.MustJSON(map[string]string{"Step": createStep, "Outcome": "done", "Result": result}))
	res := m.result(t, run)
	if want := "Stored: " + result; res.Answer != want {
		t.Fatalf("answer %q, want %q", res.Answer, want)
	}
	if res.Steps != 5 {
		t.Fatalf("result steps %d, want 5", res.Steps)
	}

	// The tool never ran after the kill: the server replaces the file on
	// every write, and it is still the file the held call wrote.
	if now := m.memory(t, entity); !os.SameFile(written, now) {
		t.Fatalf("the memory file was rewritten after the kill: create_entities ran again")
	}
	final, err := state(t, m.srv, run)
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []workflows.StepRecord{
		{Name: "llm/1", Kind: agent.KindModel},
		{Name: "tool/1/0/read_graph", Kind: agent.KindRead},
		{Name: "llm/2", Kind: agent.KindModel},
		{Name: createStep, Kind: agent.KindWrite, Generation: 1, Reconciled: true},
		{Name: "llm/3", Kind: agent.KindModel},
	}
	if final.Status != agent.StatusCompleted || final.Indeterminate != "" || !reflect.DeepEqual(withoutPreviews(t, final.Steps), wantSteps) {
		t.Fatalf("final state: status %s, indeterminate %q, steps %+v; want Completed, none, %+v", final.Status, final.Indeterminate, final.Steps, wantSteps)
	}

	h := history(t, m.srv, run)
	wantAttempts := map[string]int32{"tools": 1, "llm/1": 1, "tool/1/0/read_graph": 1, "llm/2": 1, createStep: 2, "llm/3": 1}
	if !reflect.DeepEqual(h.attempts, wantAttempts) {
		t.Fatalf("activity attempts %v, want %v", h.attempts, wantAttempts)
	}
	if want := []string{createStep + ": " + activities.ErrTypeIndeterminate}; !reflect.DeepEqual(h.failed, want) {
		t.Fatalf("failed activities %q, want %q", h.failed, want)
	}
	if n := count(h.statuses, "Indeterminate"); n != 1 || last(h.statuses) != "Completed" {
		t.Fatalf("AgentRunStatus over the run: %q; want Indeterminate once and Completed last", h.statuses)
	}
	if n := modelCalls(t, m.srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
}

// TestMCPIdempotentWriteKilledIsRetried: a worker SIGKILLed after the
// memory server's delete_observations (a write the server annotates
// idempotentHint) took effect. Temporal retries it on another worker, the
// tool runs once more, and the run completes without ever being
// Indeterminate.
func TestMCPIdempotentWriteKilledIsRetried(t *testing.T) {
	t.Parallel()
	m := newMCPFleet(t, `{"turns": [
		{"tool_calls": [{"name": "create_entities", "args": {"entities": [{"name": "alpha", "entityType": "project", "observations": ["keep", "drop"]}]}}]},
		{"tool_calls": [{"name": "delete_observations", "args": {"deletions": [{"entityName": "alpha", "observations": ["drop"]}]}}]},
		{"text": "Done: {{last_tool_result}}"}
	]}`)
	const run = "e2e-mcp-idempotent"
	w1 := testenv.Start(t, m.env(holdAfter("delete_observations")), testenv.Program(t, "worker"))
	m.start(t, run)

	m.waitHeld(t, w1, "delete_observations")
	const entity = `{"type":"entity","name":"alpha","entityType":"project","observations":["keep"]}`
	held := m.memory(t, entity)
	w1.Kill(t)
	testenv.Start(t, m.env(), testenv.Program(t, "worker"))

	res := m.result(t, run)
	// The tool's text, then its structured content, which no text block
	// holds (see tools/mcp's doc).
	if want := "Done: Observations deleted successfully\n" + `{"message":"Observations deleted successfully","success":true}`; res.Answer != want || res.Steps != 5 {
		t.Fatalf("result %+v, want answer %q over 5 steps", res, want)
	}
	// The retry ran the tool again (the server replaced the file once
	// more), and its effect is the same: "drop" deleted, "keep" kept.
	if now := m.memory(t, entity); os.SameFile(held, now) {
		t.Fatalf("the memory file was not rewritten after the kill: delete_observations did not run again")
	}
	final, err := state(t, m.srv, run)
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []workflows.StepRecord{
		{Name: "llm/1", Kind: agent.KindModel},
		{Name: "tool/1/0/create_entities", Kind: agent.KindWrite, Generation: 1},
		{Name: "llm/2", Kind: agent.KindModel},
		{Name: deleteStep, Kind: agent.KindWrite},
		{Name: "llm/3", Kind: agent.KindModel},
	}
	if final.Status != agent.StatusCompleted || !reflect.DeepEqual(withoutPreviews(t, final.Steps), wantSteps) {
		t.Fatalf("final state: status %s, steps %+v; want Completed, %+v", final.Status, final.Steps, wantSteps)
	}

	h := history(t, m.srv, run)
	// The listed specs: the server's annotations make delete_observations
	// an idempotent write and create_entities a write that is not.
	kinds := map[string]string{}
	for _, s := range h.catalog.Tools {
		kinds[s.Name] = kindOf(s)
	}
	if kinds["create_entities"] != "write" || kinds["delete_observations"] != "write idempotent" || kinds["read_graph"] != "read" || len(kinds) != 9 {
		t.Fatalf("tools listed by the run: %v; want 9 tools, create_entities a write, delete_observations an idempotent write", kinds)
	}
	wantAttempts := map[string]int32{"tools": 1, "llm/1": 1, "tool/1/0/create_entities": 1, "llm/2": 1, deleteStep: 2, "llm/3": 1}
	if !reflect.DeepEqual(h.attempts, wantAttempts) {
		t.Fatalf("activity attempts %v, want %v", h.attempts, wantAttempts)
	}
	if len(h.failed) != 0 {
		t.Fatalf("failed activities %q, want none", h.failed)
	}
	if n := count(h.statuses, "Indeterminate"); n != 0 || last(h.statuses) != "Completed" {
		t.Fatalf("AgentRunStatus over the run: %q; want never Indeterminate and Completed last", h.statuses)
	}
	if n := modelCalls(t, m.srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
}

// mcpFleet is a fleet whose workers offer the tools of one memory server
// (stdio, its file in a temporary folder) and play a scripted model.
type mcpFleet struct {
	*fleet
	memFile string
	extra   []string // AGENTRUN_TOOLS and AGENTRUN_MODEL
}

func newMCPFleet(t *testing.T, script string) *mcpFleet {
	t.Helper()
	return newMCPFleetTools(t, script, map[string]any{
		"read_graph":          map[string]string{"approval": "never"},
		"create_entities":     map[string]string{"approval": "never"},
		"delete_observations": map[string]string{"approval": "never"},
	})
}

// newMCPFleetTools is newMCPFleet with the tools file's per-tool
// overrides.
func newMCPFleetTools(t *testing.T, script string, overrides map[string]any) *mcpFleet {
	t.Helper()
	bin := mcptest.Bin(t, mcptest.Memory)
	m := &mcpFleet{fleet: newFleet(t, testenv.DevServer(t)), memFile: filepath.Join(t.TempDir(), "memory.jsonl")}
	cfg := map[string]any{
		"demo":    map[string]bool{"lookup": false, "create_ticket": false, "find_ticket": false},
		"servers": []any{map[string]any{"name": "memory", "command": bin, "env": map[string]string{"MEMORY_FILE_PATH": m.memFile}}},
		"tools":   overrides,
	}
	toolsFile := filepath.Join(m.dir, "tools.json")
	scriptFile := filepath.Join(m.dir, "script.json")
	if err := os.WriteFile(toolsFile, []byte(testenv.MustJSON(cfg)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	m.extra = []string{"AGENTRUN_TOOLS=" + toolsFile, "AGENTRUN_MODEL=scripted:" + scriptFile}
	return m
}

func (m *mcpFleet) env(extra ...string) []string {
	return m.fleet.env(append(append([]string{}, m.extra...), extra...)...)
}

// withoutPreviews returns steps without their previews, after checking that
// each has one.
func withoutPreviews(t *testing.T, steps []workflows.StepRecord) []workflows.StepRecord {
	t.Helper()
	out := make([]workflows.StepRecord, len(steps))
	for i, s := range steps {
		if s.Preview == "" {
			t.Errorf("step %s has no preview", s.Name)
		}
		s.Preview = ""
		out[i] = s
	}
	return out
}

func holdAfter(tool string) string { return testenv.HoldAfter + "=" + tool }

func (m *mcpFleet) start(t *testing.T, run string) {
	t.Helper()
	code, out := testenv.Run(t, m.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, "Keep the knowledge graph up to date.")
	if code != 0 || !strings.Contains(out, "started run "+run) {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
}

// waitHeld waits until the worker logs that it holds after tool.
func (m *mcpFleet) waitHeld(t *testing.T, w *testenv.Proc, tool string) {
	t.Helper()
	testenv.AwaitHold(t, w, testenv.HoldAfter, tool, 2*time.Minute)
	line := testenv.HoldLine(testenv.HoldAfter, tool)
	if n := strings.Count(w.Output(), line); n != 1 {
		t.Fatalf("%q logged %d times, want 1:\n%s", line, n, w.Output())
	}
}

// memory checks that the memory file holds exactly the one line want and
// returns the file's identity (the server replaces the file on each write).
func (m *mcpFleet) memory(t *testing.T, want string) os.FileInfo {
	t.Helper()
	f, err := os.Open(m.memFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Fatalf("memory file:\n%s\nwant exactly:\n%s", b.String(), want)
	}
	return fi
}

func (m *mcpFleet) result(t *testing.T, run string) workflows.Result {
	t.Helper()
	var res workflows.Result
	if err := m.srv.Client.GetWorkflow(t.Context(), run, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	return res
}

// runHistory is what a run's history says about its activities and status.
type runHistory struct {
	attempts map[string]int32   // activity id -> attempt of its ActivityTaskStarted
	failed   []string           // "activity id: failure type" of each ActivityTaskFailed
	statuses []string           // AgentRunStatus as started and upserted, in order
	catalog  activities.Catalog // the result of ListTools
}

func history(t *testing.T, srv *testenv.Server, runID string) runHistory {
	t.Helper()
	dc := testenv.SuiteConverter(t)
	h := runHistory{attempts: map[string]int32{}}
	ids := map[int64]string{} // scheduled event id -> activity id
	status := func(fields map[string]*commonpb.Payload) {
		if p := fields[workflows.StatusKey.GetName()]; p != nil {
			var s string
			if err := dc.FromPayload(p, &s); err != nil {
				t.Fatal(err)
			}
			h.statuses = append(h.statuses, s)
		}
	}
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			status(a.GetSearchAttributes().GetIndexedFields())
		}
		if a := e.GetUpsertWorkflowSearchAttributesEventAttributes(); a != nil {
			status(a.GetSearchAttributes().GetIndexedFields())
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			ids[e.GetEventId()] = a.GetActivityId()
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			h.attempts[ids[a.GetScheduledEventId()]] = a.GetAttempt()
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil {
			h.failed = append(h.failed, ids[a.GetScheduledEventId()]+": "+a.GetFailure().GetApplicationFailureInfo().GetType())
		}
		if a := e.GetActivityTaskTimedOutEventAttributes(); a != nil {
			h.failed = append(h.failed, ids[a.GetScheduledEventId()]+": timed out")
		}
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && ids[a.GetScheduledEventId()] == "tools" {
			if err := dc.FromPayloads(a.GetResult(), &h.catalog); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

func kindOf(s agent.ToolSpec) string {
	if s.Idempotent {
		return string(s.Kind) + " idempotent"
	}
	return string(s.Kind)
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func last(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[len(xs)-1]
}
