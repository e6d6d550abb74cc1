package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testenv"
)

// TestBadInputWritesNothing: every refused run id, marker, step, outcome
// or prompt gets a one-line error naming what was wrong and what is valid,
// the exit code says which kind of refusal it was, and the journal is
// byte for byte what it was.
func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journal")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+jdir, "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted")
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", "file a ticket"); code != 3 {
		t.Fatalf("setup run: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
	before := snapshot(t, dir)

	cases := []struct {
		prog string
		args []string
		code int
		want string
	}{
		{starter, []string{"--local", "--id", "../x", "p"}, 2, "letters, digits"},
		{starter, []string{"--local", "--id", "", "p"}, 2, "--id is required"},
		{starter, []string{"--local", "--id", strings.Repeat("a", 129), "p"}, 2, "129 characters"},
		{starter, []string{"--local", "--id", "ré", "p"}, 2, "letters, digits"},
		{starter, []string{"--local", "--id", "new-run"}, 2, "give a prompt to start it"},
		{starter, []string{"--local", "--id", "r1", "another prompt"}, 1, "exists with another prompt"},
		{starter, []string{"--local", "--wait", "--id", "r1"}, 2, "--wait is for runs on Temporal"},
		{reconcile, []string{"--local", "approve", "r1", "tool/9/0/create_ticket"}, 1, "not awaiting approval; pending: tool/2/0/create_ticket"},
		{reconcile, []string{"--local", "approve", "r1", "ticket"}, 2, "not a tool step"},
		{reconcile, []string{"--local", "approve", "../x", "tool/2/0/create_ticket"}, 2, "letters, digits"},
		{reconcile, []string{"--local", "approve", "nosuch", "tool/2/0/create_ticket"}, 1, "unknown run"},
		{reconcile, []string{"--local", "deny", "r1", "tool/2/0/create_ticket"}, 2, "deny takes RUN MARKER REASON"},
		{reconcile, []string{"--local", "done", "r1", "tool/2/0/create_ticket", ""}, 2, "needs the result"},
		{reconcile, []string{"--local", "done", "r1", "tool/2/0/create_ticket", "TICKET-1"}, 1, "is not indeterminate"},
		{reconcile, []string{"--local", "retry", "r1", "llm/x"}, 2, "not a tool step"},
		{reconcile, []string{"--local", "frobnicate"}, 2, `unknown command "frobnicate"`},
		{reconcile, []string{"--local", "show", "nosuch"}, 1, "unknown run"},
		{reconcile, []string{"--local", "show"}, 2, "show takes RUN"},
		{reconcile, []string{"--local", "show", "r1", "--step", "llm/x"}, 2, `step "llm/x" is not a step name`},
		{reconcile, []string{"--local", "show", "r1", "--step"}, 2, "show takes RUN [--step STEP]"},
		{reconcile, []string{"--local", "show", "r1", "--step", "tool/9/0/lookup"}, 1, "run r1 has not reached it"},
	}
	for _, c := range cases {
		code, out := testenv.Run(t, env, time.Minute, c.prog, c.args...)
		line := strings.TrimSpace(out)
		if code != c.code || !strings.Contains(line, c.want) || strings.Count(line, "\n") != 0 {
			t.Errorf("%s %q: exit %d, output %q; want exit %d and one line containing %q", filepath.Base(c.prog), c.args, code, out, c.code, c.want)
		}
	}
	for _, v := range []string{"0", "-5", "lots"} {
		code, out := testenv.Run(t, append(env, "AGENTRUN_CONTEXT_BUDGET="+v), time.Minute, starter, "--local", "--id", "r1")
		if line := strings.TrimSpace(out); code != 2 || !strings.Contains(line, "AGENTRUN_CONTEXT_BUDGET") || !strings.Contains(line, "positive number") || strings.Contains(line, "\n") {
			t.Errorf("AGENTRUN_CONTEXT_BUDGET=%s: exit %d, output %q; want exit 2 and one line", v, code, out)
		}
	}
	// Model settings: a bad timeout, flag or models file.
	models := func(body string) string {
		path := filepath.Join(t.TempDir(), "models.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct{ env, want string }{
		{"AGENTRUN_MODEL_TIMEOUT=0", `AGENTRUN_MODEL_TIMEOUT="0" is not a positive duration: want a Go duration such as 90s or 5m (default 2m)`},
		{"AGENTRUN_MODEL_TIMEOUT=-1s", `AGENTRUN_MODEL_TIMEOUT="-1s" is not a positive duration`},
		{"AGENTRUN_MODEL_TIMEOUT=soon", `AGENTRUN_MODEL_TIMEOUT="soon" is not a positive duration`},
		{"AGENTRUN_FAIL_ON_CUT_ANSWER=maybe", `AGENTRUN_FAIL_ON_CUT_ANSWER="maybe" is not a boolean: want 1`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"temperature": "hot"}}`), `"scripted": temperature: "hot" is not valid here; want a number`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"temp": 1}}`), `"scripted": temp: unknown setting; valid: temperature, top_p, seed, max_tokens, reasoning_effort, extra`},
		{"AGENTRUN_MODELS=" + models(`{"openai:gpt-4o": {"temperature": 1}}`), `has no settings for AGENTRUN_MODEL=scripted; it has openai:gpt-4o`},
		{"AGENTRUN_MODELS=" + filepath.Join(dir, "nosuch.json"), "AGENTRUN_MODELS: models file: open"},
	} {
		code, out := testenv.Run(t, append(env, c.env), time.Minute, starter, "--local", "--id", "r1")
		if line := strings.TrimSpace(out); code != 2 || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
			t.Errorf("%s: exit %d, output %q; want exit 2 and one line containing %q", c.env, code, out, c.want)
		}
	}
	if after := snapshot(t, dir); after != before {
		t.Fatalf("refused input changed the files:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot lists every file under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(path + "\n")
		if !info.IsDir() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestShowStepLocal: reconcile --local show RUN --step prints a step's
// whole input and output, with the values kept by reference read back from
// the content store.
func TestShowStepLocal(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	topic := strings.Repeat("very long topic ", 100) // 1,600 bytes: kept by reference
	script := `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"` + topic + `"}}]},{"text":"Looked up: {{last_tool_result}}"}]}`
	scriptFile := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"), "AGENTRUN_MODEL=scripted:"+scriptFile)
	if code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "r1", "look it up"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step", "tool/1/0/lookup")
	if code != 0 || !strings.Contains(out, `input: lookup({"topic":"`+topic+`"})`) || !strings.Contains(out, "output:\nNo policy found for "+topic) {
		t.Fatalf("show --step tool/1/0/lookup: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step=llm/2")
	if code != 0 || !strings.Contains(out, "input: 3 messages (2 before the step, 1 new)") || !strings.Contains(out, "--- 3. tool tool/1/0/lookup\nNo policy found for "+topic) ||
		!strings.Contains(out, "--- 4. assistant\nLooked up: No policy found for "+topic) {
		t.Fatalf("show --step llm/2: exit %d\n%s", code, out)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "journal", "content"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("content store: %v, %d entries; want the large values there", err, len(entries))
	}
}
