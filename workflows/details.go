package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/mdtext"
	"github.com/agentrun/agentrun/plumbing/shell"
)

// SignalCommand is the Temporal CLI command that sends an operator signal,
// on one line, as an operator would type it. cli is how the reader runs
// the Temporal CLI ("" for "temporal", e.g. "bin/temporal"); a namespace
// other than default is named.
func SignalCommand(cli, namespace, runID, name string, payload any) string {
	return signalCommand(cli, namespace, runID, name, payload, " ")
}

// signalCommand renders the command; sep goes before --input (a line
// break in markdown blocks). The current details, read anywhere, name the
// CLI "temporal", as on a PATH.
func signalCommand(cli, namespace, runID, name string, payload any, sep string) string {
	b, _ := json.Marshal(payload)
	ns := ""
	if namespace != "" && namespace != "default" {
		ns = " --namespace " + shell.Quote(namespace)
	}
	if cli == "" {
		cli = "temporal"
	}
	return fmt.Sprintf("%s workflow signal%s -w %s --name %s%s--input %s", cli, ns, shell.Quote(runID), name, sep, shell.Quote(string(b)))
}

// Summary is the run's static summary in the UI: its prompt on one line,
// cut at a character boundary to at most 200 bytes.
func Summary(prompt string) string { return clip(prompt, 200) }

// StaticDetails is the run's fixed details in the UI: where to look, which
// holds even while no worker runs.
func StaticDetails(runID string) string {
	return "An agentrun run: every model call and tool call is an activity named after its step.\n\n" +
		"- What it waits for, and the exact command that unblocks it: **Current Details** (needs a running worker).\n" +
		"- Where it stands, also without a worker: the search attributes `" + operator.StatusAttribute + "` and `" + operator.StepAttribute + "`.\n" +
		"- Everything it knows: **Queries** → `state`, or\n\n```sh\ntemporal workflow query -w " + shell.Quote(runID) + " --name state\n```\n\n---\n"
}

// plural renders "1 step" or "2 steps".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// details renders the run's current details in markdown: what it waits for
// and the exact commands that unblock it. The UI renders it unstyled in a
// frame that loses its last few pixels, so every command sits in its own
// block, long commands break before --input, other long lines are wrapped
// (the frame does not wrap them), and a rule closes the text.
//
// Every value the run did not write itself (answers, arguments, tool
// values, names, reasons, errors) goes through plumbing/mdtext: in a block,
// a code span or escaped, never as markdown or HTML of its own, since the
// UI renders both (a model's answer must not draw an approval section).
func details(namespace, runID string, s *State) string {
	var b strings.Builder
	cmd := func(name string, payload any) string {
		return mdtext.Block("sh", signalCommand("", namespace, runID, name, payload, " \\\n  "))
	}
	block := func(text string) string { return mdtext.Block("", wrap(text, detailsWidth)) }
	code, text := mdtext.Code, mdtext.Text
	quote := func(answer string) {
		for _, line := range mdtext.Lines(cut(answer, 4000)) {
			fmt.Fprintf(&b, "> %s\n", line)
		}
	}
	if f := s.Fork; f != nil {
		fmt.Fprintf(&b, "This run is a %s: its steps before %s are %s's record, the rest its own; %s shows the origin.\n\n",
			text(f.String()), code(f.From), code(f.Origin), code("reconcile show "+shell.Quote(f.Origin)))
	}
	if c := s.Child; c != nil && c.waits() {
		var chain []string
		for at := c; at != nil; at = at.Child {
			chain = append(chain, fmt.Sprintf("%s (run %s)", code(at.Agent), code(at.Run)))
		}
		fmt.Fprintf(&b, "Waits for its agent %s, from step %s: what follows is where that run stands. The commands below reach it through this run; %s shows it.\n\n",
			strings.Join(chain, " → "), code(c.Step), code("reconcile show "+shell.Quote(c.Deepest().Run)))
	}
	switch s.Status {
	case agent.StatusAwaitingApproval:
		fmt.Fprintf(&b, "**Awaiting approval** of %s.\n", plural(len(s.Pending), "tool call"))
		for i, p := range s.Pending {
			args := mdtext.Block("json", prettyJSON(p.Args, 2000))
			if p.ArgsRef != nil {
				args = fmt.Sprintf("%d bytes, kept by reference; only the start is shown here:\n\n%s\nThe whole arguments, to read before you decide: %s\n", p.ArgsRef.Size, block(p.ArgsRef.Preview), code("reconcile show "+shell.Quote(runID)+" --step "+shell.Quote(p.Marker)))
			}
			label := "Arguments"
			if p.Digest != "" {
				label += " (digest " + code(p.Digest) + "; the commands below name it, so they decide on these arguments only)"
			}
			fmt.Fprintf(&b, "\n#### %d. %s (%s)\n\n%s:\n\n%s\nApprove:\n\n%s\nDeny (replace REASON; the model reads it):\n\n%s",
				i+1, code(p.Tool), code(p.Marker), wrap(label, detailsWidth), args, cmd(operator.SignalApprove, operator.ApprovePayloadOf(p.Marker, p.Digest, "")), cmd(operator.SignalDeny, operator.DenyPayloadOf(p.Marker, "REASON", p.Digest, "")))
			b1, _ := json.Marshal(operator.ApprovePayloadOf(p.Marker, p.Digest, ""))
			fmt.Fprintf(&b, "\nIn the Web UI: More Actions → Send a Signal → `approve`, Data %s\n", code(string(b1)))
		}
	case agent.StatusIndeterminate:
		fmt.Fprintf(&b, "**Indeterminate**: the write %s started and never recorded its result; it may or may not have taken effect. Nothing runs until a person decides.\n", code(s.Indeterminate))
		if s.Why != "" {
			fmt.Fprintf(&b, "\nCause:\n\n%s", block(cut(s.Why, 1000)))
		}
		if f := s.Fence; f != nil && f.Step == s.Indeterminate {
			fmt.Fprintf(&b, "\n**%s may still be running until %s**: check the world after that; a retry is refused until then.\n", text(f.Attempt), text(operator.FormatUntil(f.Until)))
		}
		fmt.Fprintf(&b, "\nCheck the world first, then record what happened, with the real result in place of RESULT:\n\n%s\nor, only if it did not take effect, run it once more:\n\n%s",
			cmd(operator.SignalReconcile, operator.DonePayload(s.Indeterminate, "RESULT")), cmd(operator.SignalReconcile, operator.RetryPayload(s.Indeterminate)))
	case agent.StatusBudgetExceeded:
		fmt.Fprintf(&b, "**Budget exceeded**: %s. The run waits until its limits are raised.\n\n", text(s.Reason))
		turns, used := s.Used()
		cached := ""
		if c := used.Cached(); c != "" {
			cached = " (" + text(c) + ")"
		}
		fmt.Fprintf(&b, "Used: %s, %d tokens%s%s. Limits: %d model calls, %s%s.\n", plural(turns, "model call"), used.Total(), cached, costUsed(used), s.Budget.MaxTurns, tokenLimit(s.Budget.MaxTokens), costLimit(s.Budget.MaxCost))
		fmt.Fprintf(&b, "\nRaise them (each above what is used; 0 keeps a limit):\n\n%s", cmd(operator.SignalBudget, operator.RaiseHint(s.Budget, turns, used)))
	case agent.StatusCompleted:
		fmt.Fprintf(&b, "**Completed** after %s.\n\n", plural(s.StepCount, "step"))
		quote(s.Answer)
		if s.CutOff {
			fmt.Fprintf(&b, "\n**Cut off**: %s.\n", agent.CutOffNote)
		}
		if s.Empty {
			fmt.Fprintf(&b, "\n**Empty**: %s.\n", agent.EmptyNote)
		}
		for _, st := range s.Steps {
			if st.Reconciled {
				fmt.Fprintf(&b, "\n%s was reconciled by a person (done): the result is theirs.\n", code(st.Name))
			}
		}
	case agent.StatusIdle:
		fmt.Fprintf(&b, "**Idle**: this session answered after %s and waits for a message; with none for %s it completes with this answer.\n\n", plural(s.StepCount, "step"), text(s.Idle))
		quote(s.Answer)
		if s.Empty {
			fmt.Fprintf(&b, "\n**Empty**: %s.\n", agent.EmptyNote)
		}
		fmt.Fprintf(&b, "\nSend a message (replace TEXT):\n\n%s\nor: %s\n", cmd(operator.SignalMessage, operator.MessagePayload("TEXT")), code("reconcile message "+shell.Quote(runID)+" TEXT --wait"))
	case agent.StatusCancelled:
		fmt.Fprintf(&b, "**Cancelled** after %s: %s.\n", plural(s.StepCount, "step"), text(s.Reason))
	case agent.StatusFailed:
		fmt.Fprintf(&b, "**Failed**:\n\n%s", block(cut(s.Reason, 2000)))
	default:
		fmt.Fprintf(&b, "**Running**: %s completed.\n", plural(s.StepCount, "step"))
		if rt := s.Retry; rt != nil {
			fmt.Fprintf(&b, "\n**Retrying**:\n\n%s", block(rt.String()))
		}
		if lw := s.LimitWait; lw != nil {
			fmt.Fprintf(&b, "\n**Waiting for the rate limit** (no failure: the call goes when its slot comes, as its worker reckoned when the wait began):\n\n%s", block(lw.String()))
		}
		if f := s.Fence; f != nil && f.Waiting {
			fmt.Fprintf(&b, "\n**Waiting** before it settles the write %s: %s may still be running until %s. Nothing probes or runs it again before then; then it goes on by itself.\n", code(f.Step), text(f.Attempt), text(operator.FormatUntil(f.Until)))
		}
		if n := len(s.Steps); n > 0 && s.Steps[n-1].Preview != "" {
			last := s.Steps[n-1]
			fmt.Fprintf(&b, "\nLast, %s:\n\n%s", code(last.Name), block(last.Preview))
		}
	}
	if _, used := s.Used(); used.Cost > 0 && s.Status != agent.StatusBudgetExceeded {
		limit := ""
		if s.Budget.MaxCost > 0 {
			limit = " (its limit: " + agent.FormatCost(s.Budget.MaxCost) + ")"
		}
		fmt.Fprintf(&b, "\nCost so far: %s at the models' prices%s.\n", agent.FormatCost(used.Cost), limit)
	}
	if n := len(s.Expired); n > 0 {
		e := s.Expired[n-1]
		fmt.Fprintf(&b, "\n**Approval expired** (%d so far; the newest): %s (%s) waited %s and was denied; the model was told.\n", n, code(e.Tool), code(e.Marker), text(e.After))
	}
	if n := len(s.Settled); n > 0 {
		fmt.Fprintf(&b, "\n**Settled without a person** (%d so far; the newest last):\n\n", n)
		for _, st := range s.Settled[max(0, n-3):] {
			fmt.Fprintf(&b, "%s\n", wrap(fmt.Sprintf("- %s: %s", code(st.Step), text(st.Settled.String())), detailsWidth))
		}
	}
	if n := len(s.Rejected); n > 0 {
		r := s.Rejected[n-1]
		fmt.Fprintf(&b, "\n**Rejected input** (%d so far; the newest): signal %s with\n\n%s\n%s\n", n, code(r.Signal), block(r.Payload), text(r.Reason))
	}
	b.WriteString("\n---\n")
	return b.String()
}

// tokenLimit renders a token limit, 0 being none.
func tokenLimit(n int64) string {
	if n <= 0 {
		return "no token limit"
	}
	return fmt.Sprintf("%d tokens", n)
}

// prettyJSON indents JSON for people, cut to at most n bytes, its long
// lines wrapped for the details box.
func prettyJSON(raw []byte, n int) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return wrap(cut(string(raw), n), detailsWidth)
	}
	return wrap(cut(buf.String(), n), detailsWidth)
}

// cut shortens s to at most n bytes at a character boundary, keeping its
// lines, and marks the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// clip shortens s to at most n bytes on one line, for one-line displays.
func clip(s string, n int) string { return agent.Clip(s, n) }

// costUsed renders a cost used after the tokens: ", $0.0123", or "" when
// the models have no price.
func costUsed(u agent.Usage) string {
	if u.Cost <= 0 {
		return ""
	}
	return ", " + agent.FormatCost(u.Cost)
}

// costLimit renders a cost limit after the others: ", a cost of $5.0000",
// or "" for none.
func costLimit(max float64) string {
	if max <= 0 {
		return ""
	}
	return ", a cost of " + agent.FormatCost(max)
}
