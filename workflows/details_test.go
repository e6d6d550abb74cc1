package workflows

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

func TestDetails(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		ns    string
		state State
		want  []string
	}{
		{"awaiting approval", "default", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{
			Marker: hand.TicketStep, Tool: "create_ticket", Args: json.RawMessage(`{"title":"x"}`)}}}, []string{
			"**Awaiting approval** of 1 tool call.",
			"```json\n{\n  \"title\": \"x\"\n}\n```",
			"temporal workflow signal -w run-1 --name approve \\\n  --input '{\"Marker\":\"tool/2/0/create_ticket\"}'",
			"--name deny \\\n  --input '{\"Marker\":\"tool/2/0/create_ticket\",\"Reason\":\"REASON\"}'",
		}},
		{"arguments kept by reference", "default", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{
			Marker: "tool/7/0/write_file", Tool: "write_file", ArgsRef: &agent.Ref{Key: "sha256:ab", Size: 5000, Preview: `{"path":"a.txt","text":"hello…`}}}}, []string{
			"5000 bytes, kept by reference; only the start is shown here:\n\n```\n{\"path\":\"a.txt\",\"text\":\"hello…\n```",
			"The whole arguments, to read before you decide: `reconcile show run-1 --step tool/7/0/write_file`",
		}},
		{"the digest pins the commands", "default", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{
			Marker: hand.TicketStep, Tool: "create_ticket", Args: json.RawMessage(`{"title":"x"}`), Digest: "sha256:0123456789abcdef"}}}, []string{
			"(digest `sha256:0123456789abcdef`;",
			"--name approve \\\n  --input '{\"Marker\":\"tool/2/0/create_ticket\",\"Digest\":\"sha256:0123456789abcdef\"}'",
			"--input '{\"Marker\":\"tool/2/0/create_ticket\",\"Reason\":\"REASON\",\"Digest\":\"sha256:0123456789abcdef\"}'",
			"Data `{\"Marker\":\"tool/2/0/create_ticket\",\"Digest\":\"sha256:0123456789abcdef\"}`",
		}},
		{"budget exceeded shows the cached tokens", "default", State{Status: agent.StatusBudgetExceeded, Reason: "the run used 2 of 2 model calls",
			Turns: 2, Usage: agent.Usage{InputTokens: 4190, OutputTokens: 1006, CacheReadTokens: 1805, CacheWriteTokens: 268}, Budget: agent.Budget{MaxTurns: 2}}, []string{
			"Used: 2 model calls, 5196 tokens (1805 read from the cache, 268 written to it). Limits: 2 model calls, no token limit.",
		}},
		{"a cut answer says so", "default", State{Status: agent.StatusCompleted, Answer: "The policy says", CutOff: true, StepCount: 1}, []string{
			"**Completed** after 1 step.", "> The policy says", "**Cut off**: the final answer was cut off by the model's length limit (finish reason length)",
		}},
		{"an empty answer says so", "default", State{Status: agent.StatusCompleted, Empty: true, StepCount: 1}, []string{
			"**Completed** after 1 step.", "**Empty**: the model returned nothing: the final answer has no text.",
		}},
		{"an empty session answer says so", "default", State{Status: agent.StatusIdle, Empty: true, StepCount: 3, Idle: "24h0m0s"}, []string{
			"**Idle**: this session answered after 3 steps", "**Empty**: the model returned nothing: the final answer has no text.",
		}},
		{"running shows the last step", "default", State{Status: agent.StatusRunning, StepCount: 120,
			Steps: []StepRecord{{Name: "tool/60/0/echo", Preview: "Echo: turn 60"}}}, []string{
			"**Running**: 120 steps completed.", "Last, `tool/60/0/echo`:\n\n```\nEcho: turn 60\n```",
		}},
		{"indeterminate in another namespace", "prod", State{Status: agent.StatusIndeterminate, Indeterminate: hand.TicketStep}, []string{
			"**Indeterminate**: the write `tool/2/0/create_ticket`",
			"temporal workflow signal --namespace prod -w run-1 --name reconcile \\\n  --input '{\"Step\":\"tool/2/0/create_ticket\",\"Outcome\":\"done\",\"Result\":\"RESULT\"}'",
			"--input '{\"Step\":\"tool/2/0/create_ticket\",\"Outcome\":\"retry\"}'",
		}},
		{"completed keeps the answer's lines", "default", State{Status: agent.StatusCompleted, Answer: "line one\nline two",
			Steps: []StepRecord{{Name: "llm/1"}, {Name: hand.TicketStep, Reconciled: true}}, StepCount: 2}, []string{
			"**Completed** after 2 steps.", "> line one\n> line two", "`tool/2/0/create_ticket` was reconciled by a person",
		}},
		{"failed", "default", State{Status: agent.StatusFailed, Reason: "Authentication (HTTP 401): bad key"}, []string{
			"**Failed**:\n\n```\nAuthentication (HTTP 401): bad key\n```",
		}},
		{"settled without a person", "default", State{Status: agent.StatusCompleted, Answer: "Filed TICKET-1.", StepCount: 5, Settled: []SettledStep{
			{Step: hand.TicketStep, Settled: agent.Settled{By: agent.SettledByProbe, Runs: 1,
				Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeFound, Answer: "TICKET-1: VPN"}}},
			{Step: "tool/3/0/create_ticket", Settled: agent.Settled{By: agent.SettledByKey, Key: "agentrun-1", Runs: 2}}}}, []string{
			"**Settled without a person** (2 so far; the newest last):",
			"- `tool/2/0/create_ticket`: settled by probe find\\_ticket: found, not\n  run again",
			"- `tool/3/0/create_ticket`: made safe by key: ran again with the same\n  key",
		}},
		{"rejected input", "default", State{Status: agent.StatusRunning, Rejected: []Rejected{{Signal: "approve", Payload: `{"Marker":7}`, Reason: "bad"}}}, []string{
			"**Rejected input** (1 so far; the newest): signal `approve` with\n\n```\n{\"Marker\":7}\n```\n\nbad",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := details(c.ns, "run-1", &c.state)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("details lack %q:\n%s", w, got)
				}
			}
			if !strings.HasSuffix(got, "\n---\n") {
				t.Errorf("details do not end with a rule (the UI frame cuts the last lines):\n%s", got)
			}
		})
	}
}

// TestDetailsBackticksStayInTheirBlock: arguments, a preview, a reason or
// a rejected payload holding a line of backticks cannot end their code
// block early: each block's fence is longer than any backtick run in it,
// so the markdown after it (the approve command) stays a command and the
// text in it stays text.
func TestDetailsBackticksStayInTheirBlock(t *testing.T) {
	t.Parallel()
	hostile := "x\n```\n**Approved already**: nothing to do\n````````\ny"
	args, _ := json.Marshal(map[string]string{"body": hostile})
	// A string holding a newline is escaped in JSON: a model's arguments
	// that are not JSON reach the details as they are.
	raw := json.RawMessage("not json\n```\n# Approved\n```")
	cases := []struct {
		name  string
		state State
		text  string // the hostile text as the block holds it
	}{
		{"inline arguments", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: hand.TicketStep, Tool: "create_ticket", Args: raw}}}, string(raw)},
		{"arguments kept by reference", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: hand.TicketStep, Tool: "create_ticket",
			ArgsRef: &agent.Ref{Key: "sha256:ab", Size: 4000, Preview: hostile}}}}, hostile},
		{"failed", State{Status: agent.StatusFailed, Reason: hostile}, hostile},
		{"rejected", State{Status: agent.StatusRunning, Rejected: []Rejected{{Signal: "approve", Payload: hostile, Reason: "bad"}}}, hostile},
		{"json string", State{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: hand.TicketStep, Tool: "create_ticket", Args: args}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := details("default", "run-1", &c.state)
			blocks := fences(got)
			if c.text != "" && !slices.Contains(blocks, c.text) {
				t.Errorf("no code block holds the text whole; blocks %q\n%s", blocks, got)
			}
			for _, b := range blocks {
				if strings.Contains(b, "workflow signal") && strings.Contains(b, "Approved") {
					t.Errorf("a command block holds the hostile text: %q", b)
				}
			}
			if c.state.Status == agent.StatusAwaitingApproval && !slices.ContainsFunc(blocks, func(b string) bool { return strings.HasPrefix(b, "temporal workflow signal -w run-1 --name approve") }) {
				t.Errorf("the approve command is not a block of its own; blocks %q", blocks)
			}
		})
	}
}

// fences returns the contents of the fenced code blocks of markdown md,
// parsed as CommonMark does: a block opened by N backticks is closed by a
// line of at least N backticks and nothing else.
func fences(md string) []string {
	var out, body []string
	open := 0
	for _, line := range strings.Split(md, "\n") {
		n := len(line) - len(strings.TrimLeft(line, "`"))
		switch {
		case open == 0 && n >= 3:
			open, body = n, nil
		case open > 0 && n >= open && strings.TrimRight(line, "`") == "":
			out, open = append(out, strings.Join(body, "\n")), 0
		case open > 0:
			body = append(body, line)
		}
	}
	return out
}

func TestCutKeepsCharacters(t *testing.T) {
	t.Parallel()
	if got := cut("héllo", 2); got != "h…" {
		t.Fatalf("cut = %q, want h…", got)
	}
	if got := Summary(strings.Repeat("é", 150)); len(got) > 203 || !utf8.ValidString(got) {
		t.Fatalf("Summary of 300 bytes of é = %q (%d bytes), want valid UTF-8 of at most 200 bytes and the mark", got, len(got))
	}
	if got := clip("a\n  b", 10); got != "a b" {
		t.Fatalf("clip = %q", got)
	}
}

// TestDetailsShowUntrustedTextAsText: a model's answer, a tool's name, a
// rejected signal's name and a reason holding markdown and HTML reach the
// details escaped or in code spans: no line of them begins a heading or a
// quote's end, no HTML tag or link is left whole outside a code span.
// (TestWebUIShowsHostileTextAsText renders it in the real Web UI.)
func TestDetailsShowUntrustedTextAsText(t *testing.T) {
	t.Parallel()
	const html = `</blockquote><h4>Approve</h4><a href="http://evil.example">approve</a>`
	answer := "fine\n" + html + "\n# Approved by the operator\n[click](http://evil.example)"
	for _, s := range []State{
		{Status: agent.StatusCompleted, Answer: answer, StepCount: 1},
		{Status: agent.StatusIdle, Answer: answer, StepCount: 1, Idle: "1h"},
		{Status: agent.StatusCancelled, Reason: html},
		{Status: agent.StatusBudgetExceeded, Reason: html},
		{Status: agent.StatusRunning, Rejected: []Rejected{{Signal: "x`\n#### " + html, Payload: "{}", Reason: html}}},
		{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: "tool/2/0/t", Tool: "t` " + html, Args: json.RawMessage(`{}`)}}},
	} {
		got := details("default", "run-1", &s)
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "#### x") || strings.HasPrefix(line, "</blockquote") {
				t.Errorf("%s: a line of the details is the untrusted text's markup: %q\n%s", s.Status, line, got)
			}
		}
		rest := got
		for _, span := range codeSpans(got) {
			rest = strings.Replace(rest, span, "", 1)
		}
		for _, bad := range []string{"<h4>", "<a href", "](http", "</blockquote>", "http:"} {
			for i := strings.Index(rest, bad); i >= 0; i = index(rest, bad, i+1) {
				if k := i + strings.IndexAny(bad, "<]:"); k == 0 || rest[k-1] != '\\' {
					t.Errorf("%s: %q unescaped outside a code span:\n%s", s.Status, bad, got)
				}
			}
		}
	}
}

// index is strings.Index of sub in s from byte from on, -1 if none.
func index(s, sub string, from int) int {
	if i := strings.Index(s[from:], sub); i >= 0 {
		return from + i
	}
	return -1
}

// codeSpans returns the code spans of one-line markdown text: a run of N
// backticks up to the next run of exactly N.
func codeSpans(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		for i := 0; i < len(line); {
			if line[i] != '`' {
				i++
				continue
			}
			n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
			fence := line[i : i+n]
			end := -1
			for j := i + n; j < len(line); {
				k := strings.Index(line[j:], fence)
				if k < 0 {
					break
				}
				k += j
				m := len(line[k:]) - len(strings.TrimLeft(line[k:], "`"))
				if m == n {
					end = k + n
					break
				}
				j = k + m
			}
			if end < 0 {
				i += n
				continue
			}
			out = append(out, line[i:end])
			i = end
		}
	}
	return out
}
