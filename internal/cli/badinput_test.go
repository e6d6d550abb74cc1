package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
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
		{starter, []string{"--local", "--wait", "--follow=false", "--id", "r1"}, 2, "--wait with --local follows the run: drop --follow=false"},
		{reconcile, []string{"--local", "approve", "r1", "tool/9/0/create_ticket"}, 1, "not awaiting approval; pending: tool/2/0/create_ticket"},
		{reconcile, []string{"--local", "approve", "r1", "ticket"}, 2, "not a tool step"},
		{reconcile, []string{"--local", "approve", "../x", hand.TicketStep}, 2, "letters, digits"},
		{reconcile, []string{"--local", "approve", "nosuch", hand.TicketStep}, 1, "unknown run"},
		{reconcile, []string{"--local", "deny", "r1", hand.TicketStep}, 2, "deny takes RUN MARKER REASON"},
		{reconcile, []string{"--local", "done", "r1", hand.TicketStep, ""}, 2, "needs the result"},
		{reconcile, []string{"--local", "done", "r1", hand.TicketStep, "TICKET-1"}, 1, "is not indeterminate"},
		{reconcile, []string{"--local", "retry", "r1", "llm/x"}, 2, "not a tool step"},
		{reconcile, []string{"--local", "frobnicate"}, 2, `unknown command "frobnicate"`},
		{reconcile, []string{"--local", "show", "nosuch"}, 1, "unknown run"},
		{reconcile, []string{"--local", "show"}, 2, "show takes RUN"},
		{reconcile, []string{"--local", "show", "r1", "--step", "llm/x"}, 2, `step "llm/x" is not a step name`},
		{reconcile, []string{"--local", "show", "r1", "--step"}, 2, "show takes RUN [--step STEP]"},
		{reconcile, []string{"--local", "show", "r1", "--step", "tool/9/0/lookup"}, 1, "run r1 has not reached it"},
		{starter, []string{"--local", "--id", "r2", "--max-turns", "0", "p"}, 2, "--max-turns \"0\": want a positive number of model calls"},
		{starter, []string{"--local", "--id", "r2", "--max-turns", "-3", "p"}, 2, "want a positive number of model calls"},
		{starter, []string{"--local", "--id", "r2", "--max-tokens", "lots", "p"}, 2, "want a positive number of tokens"},
		{starter, []string{"--local", "--id", "r2", "--max-cost", "-1", "p"}, 2, `--max-cost "-1": want a positive number of US dollars`},
		{starter, []string{"--local", "--id", "r2", "--max-cost", "lots", "p"}, 2, `--max-cost "lots": want a positive number of US dollars`},
		{reconcile, []string{"--local", "budget", "r1", "0", "0", "lots"}, 2, `budget MAX_COST "lots": want US dollars`},
		{reconcile, []string{"--local", "budget", "r1", "0", "0", "-2"}, 2, `MaxCost -2 is not a cost`},
		{starter, []string{"--local", "--id", "r1", "--max-turns", "40"}, 2, "run r1 exists and keeps its limits"},
		{reconcile, []string{"--local", "budget", "r1", "2"}, 1, "MaxTurns 2 is not above the 2 model calls the run made; want at least 3"},
		{reconcile, []string{"--local", "budget", "r1", "-1"}, 2, "MaxTurns -1 is negative"},
		{reconcile, []string{"--local", "message", "r1", "  ", "\t"}, 2, "message: the content is empty; want some text"},
		{reconcile, []string{"--local", "message", "r1", "--wait"}, 2, "message takes RUN TEXT... [--wait]"},
		{reconcile, []string{"--local", "message", "r1", "hello", "--wait"}, 2, "no driver follows run r1"},
		{reconcile, []string{"--local", "message", "nosuch", "hello"}, 1, "unknown run"},
		{starter, []string{"--local", "--session", "--follow=false", "--id", "r1"}, 2, "--session with --local needs a driver that follows the run: drop --follow=false"},
		{starter, []string{"--follow", "--id", "r1"}, 2, "--follow is for --local runs"},
		{reconcile, []string{"--local", "budget", "r1", "0", "0"}, 2, "it sets no limit"},
		{reconcile, []string{"--local", "budget", "r1", "many"}, 2, `budget MAX_TURNS "many"`},
		{reconcile, []string{"--local", "budget", "r1"}, 2, "budget takes RUN MAX_TURNS [MAX_TOKENS [MAX_COST]]"},
	}
	for _, c := range cases {
		code, out := testenv.Run(t, env, time.Minute, c.prog, c.args...)
		line := strings.TrimSpace(out)
		if code != c.code || !strings.Contains(line, c.want) || strings.Count(line, "\n") != 0 {
			t.Errorf("%s %q: exit %d, output %q; want exit %d and one line containing %q", filepath.Base(c.prog), c.args, code, out, c.code, c.want)
		}
	}
	for _, name := range []string{"AGENTRUN_CONTEXT_BUDGET", "AGENTRUN_MAX_TURNS", "AGENTRUN_MAX_TOKENS_PER_RUN"} {
		for _, v := range []string{"0", "-5", "lots"} {
			code, out := testenv.Run(t, append(env, name+"="+v), time.Minute, starter, "--local", "--id", "r1")
			if line := strings.TrimSpace(out); code != 2 || !strings.Contains(line, name) || !strings.Contains(line, "positive number") || strings.Contains(line, "\n") {
				t.Errorf("%s=%s: exit %d, output %q; want exit 2 and one line", name, v, code, out)
			}
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
		{"AGENTRUN_MODEL_IDLE_TIMEOUT=0", `AGENTRUN_MODEL_IDLE_TIMEOUT="0" is not a positive duration: want a Go duration such as 30s or 2m`},
		{"AGENTRUN_MODEL_IDLE_TIMEOUT=-5s", `AGENTRUN_MODEL_IDLE_TIMEOUT="-5s" is not a positive duration`},
		{"AGENTRUN_MODEL_IDLE_TIMEOUT=3m", `AGENTRUN_MODEL_IDLE_TIMEOUT=3m0s is longer than AGENTRUN_MODEL_TIMEOUT=2m0s`},
		{"AGENTRUN_FAIL_ON_CUT_ANSWER=maybe", `AGENTRUN_FAIL_ON_CUT_ANSWER="maybe" is not a boolean: want 1`},
		{"AGENTRUN_FAIL_ON_EMPTY_ANSWER=maybe", `AGENTRUN_FAIL_ON_EMPTY_ANSWER="maybe" is not a boolean: want 1`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"temperature": "hot"}}`), `"scripted": temperature: "hot" is not valid here; want a number`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"temp": 1}}`), `"scripted": temp: unknown setting; valid: temperature, top_p, seed, max_tokens, reasoning_effort, extra, price, limits`},
		{"AGENTRUN_MODELS=" + models(`{"openai:gpt-4o": {"temperature": 1}}`), `has no settings for AGENTRUN_MODEL=scripted; it has openai:gpt-4o`},
		{"AGENTRUN_MODELS=" + filepath.Join(dir, "nosuch.json"), "AGENTRUN_MODELS: models file: open"},
		// Prices: negative, missing, unknown, not a number; a price for something that is no model.
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"price": {"input": -1, "output": 2}}}`), `"scripted": price: input: -1 is negative; want a number of US dollars per million tokens`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"price": {"input": 1}}}`), `"scripted": price: output: missing; want {"input": 2.5, "output": 10`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"price": {"input": 1, "output": 2, "cached": 1}}}`), `"scripted": price: cached: unknown price; valid: input, output, cache_read, cache_write`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"price": {"input": "cheap", "output": 2}}}`), `"scripted": price: input: "cheap" is not valid here`},
		{"AGENTRUN_MODELS=" + models(`{"gpt-4o": {"price": {"input": 1, "output": 2}}}`), `"gpt-4o" is not a model`},
		// Rate limits: 0, negative, not a whole number, unknown, none, a bad pool, two models of one pool that disagree.
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"requests_per_minute": 0}}}`), `"scripted": limits: requests_per_minute: 0 is not positive; want a positive whole number of requests per minute such as 60 (leave it out for no limit)`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"tokens_per_minute": -5}}}`), `"scripted": limits: tokens_per_minute: -5 is not positive`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"requests_per_minute": 1.5}}}`), `"scripted": limits: requests_per_minute: 1.5 is not valid here; want a positive whole number`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"rpm": 60}}}`), `"scripted": limits: rpm: unknown limit; valid: requests_per_minute, tokens_per_minute, pool`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {}}}`), `"scripted": limits: neither requests_per_minute nor tokens_per_minute is set`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"requests_per_minute": 60, "pool": "Open AI"}}}`), `"scripted": limits: pool "Open AI": want lowercase letters`},
		{"AGENTRUN_MODELS=" + models(`{"scripted": {"limits": {"requests_per_minute": 60, "pool": "acct"}}, "openai:gpt-4o": {"limits": {"requests_per_minute": 90, "pool": "acct"}}}`), `"openai:gpt-4o" and "scripted" share the rate-limit pool "acct" with different limits`},
		// Agent tools: a model the worker cannot build, an unknown tool, a cycle, too deep.
		{"AGENTRUN_TOOLS=" + models(`{"agents": {"filer": {"description": "files", "model": "bogus", "tools": ["create_ticket"]}}}`), `agents["filer"].model: unknown model "bogus"`},
		{"AGENTRUN_TOOLS=" + models(`{"agents": {"filer": {"description": "files", "model": "openai:"}}}`), `agents["filer"].model: model "openai:" names no model`},
		{"AGENTRUN_TOOLS=" + models(`{"agents": {"a": {"description": "x", "tools": ["b"]}, "b": {"description": "y", "tools": ["a"]}}}`), `the agent calls itself: a → b → a`},
		{"AGENTRUN_TOOLS=" + models(`{"agent_depth": 1, "agents": {"a": {"description": "x", "tools": ["b"]}, "b": {"description": "y"}}}`), `agents nest 2 deep (a → b); at most 1 (agent_depth)`},
	} {
		code, out := testenv.Run(t, append(env, c.env), time.Minute, starter, "--local", "--id", "r1")
		if line := strings.TrimSpace(out); code != 2 || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
			t.Errorf("%s: exit %d, output %q; want exit 2 and one line containing %q", c.env, code, out, c.want)
		}
	}
	// Found when the tools are opened (exit 1, as for the file's other tool names).
	unknown := "AGENTRUN_TOOLS=" + models(`{"agents": {"filer": {"description": "files", "tools": ["nosuch"]}}}`)
	if code, out := testenv.Run(t, append(env, unknown), time.Minute, starter, "--local", "--id", "r1"); code != 1 || !strings.Contains(out, `agents["filer"].tools[0]: unknown tool "nosuch"; valid: lookup, create_ticket, find_ticket, filer`) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("an agent naming an unknown tool: exit %d, output %q; want exit 1 and one line", code, out)
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
	code, out := testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "r1", "--step", hand.LookupStep)
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

// TestWorkerRefusesBadVersioning: a worker started with a deployment name
// or build id that is empty or malformed exits at once with exit 2 and one
// line naming the setting and the valid form, before it dials Temporal
// (TEMPORAL_ADDRESS points nowhere) or writes anything.
func TestWorkerRefusesBadVersioning(t *testing.T) {
	t.Parallel()
	worker := testenv.Program(t, "worker")
	dir := t.TempDir()
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+filepath.Join(dir, "tickets.jsonl"),
		"AGENTRUN_MODEL=scripted", "TEMPORAL_ADDRESS=127.0.0.1:1")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"AGENTRUN_DEPLOYMENT=agent.run"}, `AGENTRUN_DEPLOYMENT="agent.run" is not a deployment name: want letters, digits, _ and -`},
		{[]string{"AGENTRUN_DEPLOYMENT=prod:1"}, `AGENTRUN_DEPLOYMENT="prod:1" is not a deployment name`},
		{[]string{"AGENTRUN_DEPLOYMENT= "}, `AGENTRUN_DEPLOYMENT=" " is empty`},
		{[]string{"AGENTRUN_DEPLOYMENT=" + strings.Repeat("d", 300)}, "AGENTRUN_DEPLOYMENT is 300 characters long"},
		{[]string{"AGENTRUN_DEPLOYMENT=agentrun", "AGENTRUN_BUILD_ID=__v1"}, `AGENTRUN_BUILD_ID="__v1" is not a build id: want letters, digits, _, -, . and +`},
		{[]string{"AGENTRUN_DEPLOYMENT=agentrun", "AGENTRUN_BUILD_ID=v 1"}, `AGENTRUN_BUILD_ID="v 1" is not a build id`},
		{[]string{"AGENTRUN_DEPLOYMENT=agentrun", "AGENTRUN_BUILD_ID=  "}, `AGENTRUN_BUILD_ID="  " is empty`},
		{[]string{"AGENTRUN_BUILD_ID=v1"}, `AGENTRUN_BUILD_ID="v1" is set but AGENTRUN_DEPLOYMENT is not`},
	} {
		code, out := testenv.Run(t, append(env, c.env...), time.Minute, worker)
		line := strings.TrimSpace(out)
		if code != 2 || !strings.HasPrefix(line, "worker: "+c.want) || strings.Contains(line, "\n") {
			t.Errorf("worker with %q: exit %d, output %q; want exit 2 and one line starting %q", c.env, code, out, "worker: "+c.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("a refused worker wrote %d entries into %s (%v)", len(entries), dir, err)
	}
}

// TestBudgetLocal: the starter's --max-turns stops a local run as
// BudgetExceeded (exit 7) with the command that raises it; reconcile
// --local budget records the raise and the next starter --local resumes
// the run to the approval and then the answer; after that, every operator
// input is refused and nothing is written.
func TestBudgetLocal(t *testing.T) {
	t.Parallel()
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	dir := t.TempDir()
	tickets := filepath.Join(dir, "tickets.jsonl")
	env := append(os.Environ(), "AGENTRUN_JOURNAL="+filepath.Join(dir, "journal"), "AGENTRUN_TICKETS="+tickets, "AGENTRUN_MODEL=scripted", "AGENTRUN_MAX_TURNS=2")
	code, out := testenv.Run(t, env, time.Minute, starter, "--local", "--id", "b1", "--max-turns", "1", "file a ticket")
	if code != 7 || !strings.Contains(out, "run b1: BudgetExceeded: the run made 1 model calls; its limit is 1") || !strings.Contains(out, "reconcile --local budget b1 MAX_TURNS [MAX_TOKENS [MAX_COST]]") {
		t.Fatalf("start: exit %d, want 7 with the command that raises the limit\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "list")
	if code != 0 || !strings.Contains(out, "b1\tBudgetExceeded") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "b1")
	if code != 0 || !strings.Contains(out, "run b1: BudgetExceeded") || !strings.Contains(out, "budget: 1 of 1 model calls;") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	if code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "budget", "b1", "2"); code != 0 || !strings.Contains(out, "recorded budget for run b1") {
		t.Fatalf("budget: exit %d\n%s", code, out)
	}
	if code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", "b1"); code != 3 {
		t.Fatalf("resume after the raise: exit %d, want 3 (AwaitingApproval)\n%s", code, out)
	}
	if code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "approve", "b1", hand.TicketStep); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", "b1"); code != 7 || !strings.Contains(out, "its limit is 2") {
		t.Fatalf("resume after the approval: exit %d, want 7 at the limit of 2\n%s", code, out)
	}
	if code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "budget", "b1", "3", "100000"); code != 0 {
		t.Fatalf("budget: exit %d\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", "b1")
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("resume: exit %d, want the answer\n%s", code, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "--local", "show", "b1")
	if code != 0 || !strings.Contains(out, "budget: 3 of 3 model calls;") || !strings.Contains(out, "limit 100000") {
		t.Fatalf("show after the answer: exit %d\n%s", code, out)
	}
	// Completed: every operator input is refused in one line; nothing is written.
	before := snapshot(t, dir)
	for _, args := range [][]string{{"budget", "budget", "b1", "10"}, {"approve", "approve", "b1", hand.TicketStep}, {"reconcile", "retry", "b1", hand.TicketStep}} {
		code, out := testenv.Run(t, env, time.Minute, reconcile, append([]string{"--local"}, args[1:]...)...)
		if line := strings.TrimSpace(out); code != 1 || !strings.Contains(line, args[0]+": the run is already Completed; nothing changes a run after it ended") || strings.Contains(line, "\n") {
			t.Errorf("reconcile --local %q on the completed run: exit %d, output %q; want one line naming Completed", args, code, out)
		}
	}
	if after := snapshot(t, dir); after != before {
		t.Fatal("refused inputs on a completed run changed the files")
	}
	// The settings' default applies to a new run without the flag.
	if code, out = testenv.Run(t, env, time.Minute, starter, "--local", "--id", "b2", "file a ticket"); code != 3 {
		t.Fatalf("with AGENTRUN_MAX_TURNS=2: exit %d, want 3\n%s", code, out)
	}
}
