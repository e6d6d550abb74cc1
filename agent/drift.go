package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Drift reports: where a fork's live model steps depart from its origin's.
// An engine reads both runs' recorded model replies by step (Facts.Results
// holds them: "llm/N" to the recorded ModelReply) and calls CompareRuns;
// nothing here reads a store, so the local engine and the Temporal worker
// report drift the same way.

// Drift is how a fork's live part differs from its origin.
type Drift struct {
	Origin string `json:"origin"`
	Fork   string `json:"fork"`
	From   string `json:"from"` // the fork point
	// Departed is the first live model step whose reply differs from the
	// origin's at the same step: it asks for other calls (tool names and
	// arguments, CanonicalArgs, in order) or gives another final answer,
	// or one of the two runs has no such step. "" when every live step
	// matches.
	Departed string `json:"departed,omitempty"`
	// Origin's and Fork's replies at Departed, for people (CallText).
	OriginSaid string `json:"origin_said,omitempty"`
	ForkSaid   string `json:"fork_said,omitempty"`
	// NewCalls are the calls the fork's live steps asked for that the
	// origin never made (anywhere in its run), as "NAME ARGS", in the
	// fork's order. In a replay these are the calls it refused.
	NewCalls []string `json:"new_calls,omitempty"`
	// AnswerChanged is set when the final answers differ (either run has
	// none, or another text). OriginAnswer and ForkAnswer are them.
	AnswerChanged bool   `json:"answer_changed"`
	OriginAnswer  string `json:"origin_answer,omitempty"`
	ForkAnswer    string `json:"fork_answer,omitempty"`
}

// CompareRuns returns the drift of the fork fork of origin from the step
// from, given each run's recorded results by step (model replies are
// read from them; other entries are ignored): the origin's whole run, the
// fork's own steps (its live part). The fork's live model steps are those
// from from's turn on (after it, for a fork from a tool step, whose model
// reply the fork kept).
func CompareRuns(origin, fork, from string, originResults, forkResults map[string]json.RawMessage) Drift {
	d := Drift{Origin: origin, Fork: fork, From: from}
	n, tool := StepTurn(from)
	first := max(n, 1)
	if tool {
		first = n + 1
	}
	o, f := replies(originResults, 1), replies(forkResults, first)
	seen := map[string]int{} // the origin's calls, by identity
	for _, r := range o {
		for _, c := range r.Message.ToolCalls {
			seen[callText(c)]++
		}
	}
	last := max(len(o), first-1+len(f))
	for t := first; t <= last; t++ {
		var or, fr *ModelReply
		if t <= len(o) {
			or = &o[t-1]
		}
		if i := t - first; i < len(f) {
			fr = &f[i]
		}
		if fr != nil {
			for _, c := range fr.Message.ToolCalls {
				if s := callText(c); seen[s] > 0 {
					seen[s]--
				} else {
					d.NewCalls = append(d.NewCalls, s)
				}
			}
		}
		if d.Departed == "" && replyID(or) != replyID(fr) {
			d.Departed, d.OriginSaid, d.ForkSaid = ModelStep(t), replyText(or), replyText(fr)
		}
	}
	d.OriginAnswer, d.ForkAnswer = finalAnswer(o), finalAnswer(f)
	d.AnswerChanged = answerID(o) != answerID(f)
	return d
}

// replies returns the model replies of results in turn order from turn
// first, up to the first turn that has none (or whose reply cannot be
// read).
func replies(results map[string]json.RawMessage, first int) []ModelReply {
	var out []ModelReply
	for n := first; ; n++ {
		raw, ok := results[ModelStep(n)]
		if !ok {
			return out
		}
		r, err := DecodeModelReply(raw)
		if err != nil {
			return out
		}
		out = append(out, r)
	}
}

// finalAnswer is the text of the last reply when it asks for no call.
func finalAnswer(rs []ModelReply) string {
	if len(rs) == 0 || len(rs[len(rs)-1].Message.ToolCalls) > 0 {
		return ""
	}
	return rs[len(rs)-1].Message.Text()
}

// answerID is the identity of the final answer of rs (Message.TextKey):
// the same answer whether a run recorded it inline or by reference.
func answerID(rs []ModelReply) string {
	if len(rs) == 0 || len(rs[len(rs)-1].Message.ToolCalls) > 0 {
		return ""
	}
	return rs[len(rs)-1].Message.TextKey()
}

// replyID is what a reply said, for comparing: replyText, with an answer's
// text by its key (Message.TextKey), which a preview of it is not.
func replyID(r *ModelReply) string {
	if r == nil || len(r.Message.ToolCalls) > 0 {
		return replyText(r)
	}
	return "answers " + r.Message.TextKey()
}

// callText is a call for a drift report: "NAME ARGS" (CanonicalArgs).
func callText(c ToolCall) string { return c.Name + " " + CanonicalArgs(c) }

// replyText is what a reply said, for comparing and for people: its calls
// ("calls NAME ARGS; NAME ARGS"), or "answers TEXT"; "nothing" for no reply.
func replyText(r *ModelReply) string {
	if r == nil {
		return "nothing"
	}
	if len(r.Message.ToolCalls) == 0 {
		return "answers " + r.Message.Text()
	}
	calls := make([]string, len(r.Message.ToolCalls))
	for i, c := range r.Message.ToolCalls {
		calls[i] = callText(c)
	}
	return "calls " + strings.Join(calls, "; ")
}

// String says it in one line: "fork F of O from llm/2: departs at llm/3
// (O calls lookup {...}; F answers ...); 1 new call: email {...}; answer
// changed", or "fork F of O from llm/2: no departure; answer unchanged".
func (d Drift) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fork %s of %s from %s: ", d.Fork, d.Origin, d.From)
	if d.Departed == "" {
		b.WriteString("no departure")
	} else {
		fmt.Fprintf(&b, "departs at %s (%s %s; %s %s)", d.Departed, d.Origin, Clip(d.OriginSaid, 80), d.Fork, Clip(d.ForkSaid, 80))
	}
	if len(d.NewCalls) > 0 {
		clipped := make([]string, len(d.NewCalls))
		for i, c := range d.NewCalls {
			clipped[i] = Clip(c, 80)
		}
		fmt.Fprintf(&b, "; %s the origin did not make: %s", plural(len(d.NewCalls), "call"), strings.Join(clipped, ", "))
	}
	if d.AnswerChanged {
		b.WriteString("; answer changed")
	} else {
		b.WriteString("; answer unchanged")
	}
	return b.String()
}
