package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Forks: a new run that goes on from a step of a finished run. The steps
// before the fork point come from the origin's record (no model is called
// and no tool runs for them); the fork point and every step after it run
// live, on the agent, model or system prompt the fork names. The engines
// read the origin's record themselves (the local journal; the Temporal
// history, read by the worker): a fork's start names the origin, never its
// facts.

// Fork is what a fork's start asks: the run it goes on from, the step
// where it departs and what it changes.
type Fork struct {
	// Origin is the run forked: a local run id or a Temporal workflow id.
	// It must have ended (Completed, Failed or Cancelled).
	Origin string `json:"origin"`
	// From is the fork's first live step: "llm/N" runs model call N and
	// everything after it anew; "tool/N/I/NAME" keeps model call N's reply
	// and runs its calls from I on anew (approvals asked again).
	From string `json:"from"`
	// Agent runs the live steps on another of the worker's agents (its
	// model, tools and system prompt). Default "": the origin's.
	Agent string `json:"agent,omitempty"`
	// Model runs the live steps on another model (the local engine: a
	// model spec such as "scripted:answers.json"). Default "": the agent's.
	Model string `json:"model,omitempty"`
	// System replaces the agent's system prompt in the live steps.
	// Default nil: the agent's own.
	System *string `json:"system,omitempty"`
	// AckWrites says a person acknowledged that the fork may make again
	// the writes the origin made at or after From (ForkPoint.Hazards).
	// Without it such a fork is refused (HazardError).
	AckWrites bool `json:"ack_writes,omitempty"`
	// Replay makes the fork an evaluation: no tool runs; each call the
	// live model asks for is answered from the origin's record when the
	// origin made the same call (same tool and arguments), and refused
	// otherwise.
	Replay bool `json:"replay,omitempty"`
}

// Check returns a one-line error when f is malformed (before any record is
// read).
func (f Fork) Check() error {
	switch {
	case f.Origin == "":
		return fmt.Errorf("fork: no origin; name the run to fork")
	case !ValidStep(f.From):
		return fmt.Errorf("fork: from %q is not a step name; want %s", f.From, StepFormat)
	case f.Agent != "" && !ValidToolName(f.Agent):
		return fmt.Errorf("fork: agent %q is not an agent name; want %s", f.Agent, ToolNameRule)
	}
	return nil
}

// Write is one of the origin's writes at or after a fork point: a fork may
// make it again.
type Write struct {
	Step string `json:"step"`
	// Result is the start of what the write returned, on one line; ""
	// when it has no recorded result (Unknown).
	Result string `json:"result,omitempty"`
	// Unknown is set for a write that started and recorded no result: it
	// may or may not have taken effect.
	Unknown bool `json:"unknown,omitempty"`
}

// String says it for people: `tool/1/0/create_ticket (returned
// {"ticket":"TICKET-7"})`.
func (w Write) String() string {
	if w.Unknown {
		return w.Step + " (started, outcome unknown)"
	}
	return fmt.Sprintf("%s (returned %s)", w.Step, w.Result)
}

// ForkPoint is the state a fork starts from, as its engine read it from
// the origin's record.
type ForkPoint struct {
	// Checkpoint is the loop's checkpoint at the start of the fork: the
	// conversation before model call N, as that call saw it.
	Checkpoint Checkpoint `json:"checkpoint"`
	// Results are the origin's recorded results the fork keeps past the
	// checkpoint: for a fork from a tool step, model call N's reply and
	// the results of its calls before I.
	Results map[string]json.RawMessage `json:"results,omitempty"`
	// Base is the model calls the origin made before the fork's live
	// part: the fork's budget counts only the calls after them.
	Base int `json:"base"`
	// Hazards are the origin's writes at or after the fork point, in step
	// order.
	Hazards []Write `json:"hazards,omitempty"`
	// Acked is set when the fork went on past Hazards because a person
	// acknowledged them (Fork.AckWrites).
	Acked bool `json:"acked,omitempty"`
}

// ForkAt returns the state of a fork from the step from, given the
// origin's model call N as the loop made it (in: the model input of
// "llm/N", N the turn of from) and the origin's recorded results by step
// (for a fork from a tool step: llm/N's reply and its calls' results
// before the fork point). Hazards are left for the caller (WritesAfter).
func ForkAt(from string, in ModelInput, results map[string]json.RawMessage) (ForkPoint, error) {
	n, tool := StepTurn(from)
	if n < 1 || !ValidStep(from) {
		return ForkPoint{}, fmt.Errorf("fork point %q is not a step name; want %s", from, StepFormat)
	}
	conv := in.Conversation
	conv.Tail = append(append([]Message(nil), conv.Tail...), in.New...)
	p := ForkPoint{Checkpoint: Checkpoint{Turn: n - 1, Conversation: conv}, Base: n - 1}
	if n == 1 {
		// Model call 1 takes the run's input as its new messages: a fork
		// from it starts as a run of that input does.
		p.Checkpoint = Start(in.New)
		p.Checkpoint.Conversation = in.Conversation
	}
	if !tool {
		return p, nil
	}
	i, name := toolIndex(from)
	raw, ok := results[ModelStep(n)]
	if !ok {
		return ForkPoint{}, fmt.Errorf("fork point %s: model call %s has no recorded reply", from, ModelStep(n))
	}
	reply, err := DecodeModelReply(raw)
	if err != nil {
		return ForkPoint{}, fmt.Errorf("fork point %s: the recorded reply of %s: %v", from, ModelStep(n), err)
	}
	calls := reply.Message.ToolCalls
	if i >= len(calls) || calls[i].Name != name {
		return ForkPoint{}, fmt.Errorf("fork point %s: %s asked for no such call (it asked for %s)", from, ModelStep(n), callNames(n, calls))
	}
	p.Results = map[string]json.RawMessage{ModelStep(n): raw}
	for j, c := range calls[:i] {
		step := ToolStep(n, j, c.Name)
		r, ok := results[step]
		if !ok {
			return ForkPoint{}, fmt.Errorf("fork point %s: %s, before it, has no recorded result; fork from %s", from, step, ModelStep(n))
		}
		p.Results[step] = r
	}
	p.Base = n
	return p, nil
}

// SetSystem makes system the system prompt of the conversation the fork
// starts from (agent.WithSystem): in the run's input when the fork starts
// at model call 1, else through rewrite, which stores the conversation
// anew (execute.Executor.WithSystem). The live steps then send it; the
// origin's record is not changed.
func (p *ForkPoint) SetSystem(ctx context.Context, system string, rewrite func(context.Context, Conversation, string) (Conversation, error)) error {
	cp := &p.Checkpoint
	if cp.Turn == 0 && cp.Conversation.Len() == 0 {
		cp.Input = WithSystem(cp.Input, system)
		return nil
	}
	conv, err := rewrite(ctx, cp.Conversation, system)
	if err != nil {
		return fmt.Errorf("fork: the conversation with the new system prompt: %w", err)
	}
	cp.Conversation = conv
	return nil
}

// StepBefore reports whether step a comes before step b in a run: by
// turn, a model call before its tool calls, tool calls by index.
func StepBefore(a, b string) bool {
	ta, tb := stepOrder(a), stepOrder(b)
	for k := range ta {
		if ta[k] != tb[k] {
			return ta[k] < tb[k]
		}
	}
	return false
}

// stepOrder is a step's place: turn, 0 for a model call or 1 for a tool
// call, and the call's index.
func stepOrder(s string) [3]int {
	n, tool := StepTurn(s)
	if !tool {
		return [3]int{n, 0, 0}
	}
	i, _ := toolIndex(s)
	return [3]int{n, 1, i}
}

// toolIndex returns I and NAME of "tool/N/I/NAME".
func toolIndex(step string) (int, string) {
	parts := strings.SplitN(step, "/", 4)
	if len(parts) != 4 {
		return 0, ""
	}
	i, _ := strconv.Atoi(parts[2])
	return i, parts[3]
}

func callNames(n int, calls []ToolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = ToolStep(n, i, c.Name)
	}
	return strings.Join(names, ", ")
}

// WritesAfter returns the writes of writes (in any order) at or after the
// step from, in step order.
func WritesAfter(from string, writes []Write) []Write {
	var out []Write
	for _, w := range writes {
		if !StepBefore(w.Step, from) {
			out = append(out, w)
		}
	}
	sortSteps(out)
	return out
}

func sortSteps(ws []Write) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && StepBefore(ws[j].Step, ws[j-1].Step); j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}

// HazardError refuses a fork whose point comes before writes the origin
// made, which the fork may make again, until a person acknowledges them.
type HazardError struct {
	Origin, From string
	Writes       []Write
}

func (e *HazardError) Error() string {
	names := make([]string, len(e.Writes))
	for i, w := range e.Writes {
		names[i] = w.String()
	}
	return fmt.Sprintf("fork of %s from %s: %s made %s at or after that step, which the fork may make again: %s; acknowledge with --ack-writes (AckWrites) to go on",
		e.Origin, e.From, e.Origin, plural(len(e.Writes), "write"), strings.Join(names, "; "))
}

// Gate returns the fork point with the hazards acknowledged, or a
// *HazardError when there are hazards and ack is false.
func (p ForkPoint) Gate(f Fork) (ForkPoint, error) {
	if len(p.Hazards) == 0 {
		return p, nil
	}
	if !f.AckWrites && !f.Replay {
		return p, &HazardError{Origin: f.Origin, From: f.From, Writes: p.Hazards}
	}
	p.Acked = f.AckWrites
	return p, nil
}
