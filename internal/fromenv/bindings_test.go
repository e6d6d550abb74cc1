package fromenv_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/fromenv"
)

var update = flag.Bool("update", false, "rewrite testdata/file-agents-bindings.json from the old path")

// agentsFile is a tools file like tools/example-tools.json (no MCP
// servers: they need npx and the network), with agents: one with its own
// parameters, model, system prompt and approval overrides; one that calls
// it (its tools list an agent before a tool, with an override of each);
// one above that (three levels).
const agentsFile = `{
  "demo": {"lookup": true, "create_ticket": true},
  "tools": {
    "create_ticket": {"approval_timeout": "30m", "timeout": "10s"},
    "lookup": {"timeout": "5s"}
  },
  "agents": {
    "researcher": {
      "description": "Finds the policy.",
      "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
      "model": "scripted",
      "system": "You research.",
      "tools": ["lookup", "find_ticket"],
      "approval": {"lookup": "always"}
    },
    "planner": {
      "description": "Plans the work.",
      "system": "You plan.",
      "tools": ["researcher", "create_ticket", "lookup"],
      "approval": {"researcher": "always", "create_ticket": "never"}
    },
    "boss": {
      "description": "Runs the show.",
      "tools": ["planner"]
    },
    "answerer": {
      "description": "Only answers."
    }
  }
}`

// fileAgents are agentsFile's agents.
var fileAgents = []string{"answerer", "boss", "planner", "researcher"}

// catalogs lists the catalog of a top-level run ("") and of a child run of
// each of fileAgents through a's activities.
func catalogs(t *testing.T, a *activities.Activities) map[string]activities.Catalog {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	out := map[string]activities.Catalog{}
	for _, name := range append([]string{""}, fileAgents...) {
		var (
			v   interface{ Get(any) error }
			err error
		)
		if name == "" {
			v, err = env.ExecuteActivity(a.ListTools)
		} else {
			v, err = env.ExecuteActivity(a.ListAgentTools, name)
		}
		if err != nil {
			t.Fatalf("list the tools of %q: %v", name, err)
		}
		var c activities.Catalog
		if err := v.Get(&c); err != nil {
			t.Fatal(err)
		}
		out[name] = c
	}
	return out
}

// TestFileAgentsKeepTheirBindings: the catalogs the worker's Config lists
// for a top-level run and for a child run of each tools file agent are
// the ones the builds before file agents were agentrun.Agents listed (the
// old path: one executor over the tools file's set, whose agents' children
// it makes itself), and their bindings' keys are the committed ones: a run
// such a build started goes on after the upgrade (every step carries its
// catalog's key, and a worker whose key differs refuses it).
func TestFileAgentsKeepTheirBindings(t *testing.T) {
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(agentsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	c := load(t, map[string]string{"AGENTRUN_JOURNAL": dir, "AGENTRUN_TOOLS": toolsFile, "AGENTRUN_TICKETS": filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_CONTEXT_BUDGET": "5000", "AGENTRUN_FAIL_ON_EMPTY_ANSWER": "1", "AGENTRUN_FAIL_ON_CUT_ANSWER": "1", "AGENTRUN_MODEL_TIMEOUT": "90s",
		"AGENTRUN_APPROVAL_TIMEOUT": "2h"})

	// The old path: the programs' one executor over the tools file's set.
	exec, err := fromenv.Executor(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Tools.Close()
	old := catalogs(t, &activities.Activities{Exec: exec})

	cfg, _, closeTools, err := fromenv.Worker(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTools()
	var r recorder
	if err := agentrun.Register(&r, cfg); err != nil {
		t.Fatal(err)
	}
	got := catalogs(t, r.acts)

	keys := map[string]string{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range old {
			if !yield(n) {
				return
			}
		}
	}) {
		o, n := old[name], got[name]
		if d := n.Binding().Diff(o.Binding()); d != "" || n.Binding().Key() != o.Binding().Key() {
			t.Errorf("agent %q: the binding differs from the old path's: %s", name, d)
		}
		if !reflect.DeepEqual(n, o) {
			t.Errorf("agent %q: catalog\n%+v\nwant the old path's\n%+v", name, n, o)
		}
		keys[name] = o.Binding().Key()
	}
	if len(old[""].Tools) != 7 || old["planner"].Tools[0].Name != "researcher" || old["planner"].Tools[0].Approval != "always" ||
		old["researcher"].Tools[0].Approval != "always" || old["planner"].Tools[1].Approval != "never" || old["researcher"].System != "You research." {
		t.Fatalf("the fixture does not list what it should: root %+v, planner %+v, researcher %+v", old[""].Tools, old["planner"].Tools, old["researcher"])
	}

	golden := filepath.Join("testdata", "file-agents-bindings.json")
	if *update {
		b, _ := json.MarshalIndent(keys, "", "  ")
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, name := range append([]string{""}, fileAgents...) {
		if got[name].Binding().Key() != want[name] {
			t.Errorf("agent %q: binding key %s, want the committed %s", name, got[name].Binding().Key(), want[name])
		}
	}
}
