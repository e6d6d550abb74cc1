package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Replay forks (Fork.Replay) evaluate a model on a recorded run: no tool
// runs. Each call the live model asks for is answered from the origin's
// record when the origin made a call of the same tool with the same
// arguments (CanonicalArgs), and refused otherwise. Both engines answer
// with Replay.Answer, so that a replay means the same on either.

// ReplayedNone is ToolResult.Replayed of a call the origin never made.
const ReplayedNone = "none"

// OriginCall is a tool call the origin of a replay made, with its
// recorded result.
type OriginCall struct {
	Step   string          `json:"step"` // "tool/N/I/NAME"
	Call   ToolCall        `json:"call"`
	Result json.RawMessage `json:"result"`
}

// OriginCalls returns the tool calls of a run that have a recorded
// result, in step order, from its recorded results by step (Facts.Results):
// the calls its model replies asked for. A call without a result (denied,
// never run) is left out: a replay cannot answer it.
func OriginCalls(results map[string]json.RawMessage) []OriginCall {
	var out []OriginCall
	for n := 1; ; n++ {
		raw, ok := results[ModelStep(n)]
		if !ok {
			return out
		}
		reply, err := DecodeModelReply(raw)
		if err != nil {
			continue
		}
		for i, c := range reply.Message.ToolCalls {
			step := ToolStep(n, i, c.Name)
			if res, ok := results[step]; ok {
				out = append(out, OriginCall{Step: step, Call: c, Result: res})
			}
		}
	}
}

// CanonicalArgs is the identity of a call's arguments for a replay:
// their JSON with object keys sorted and no white space (numbers keep
// their text), or "ref:KEY" for arguments kept by reference (the same
// bytes have the same key). Arguments that are not JSON are their bytes.
func CanonicalArgs(c ToolCall) string {
	if c.ArgsRef != nil {
		return "ref:" + c.ArgsRef.Key
	}
	dec := json.NewDecoder(bytes.NewReader(c.Args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(c.Args)
	}
	b, err := json.Marshal(v) // maps encode with sorted keys
	if err != nil {
		return string(c.Args)
	}
	return string(b)
}

// sameCall reports whether two calls name the same tool with the same
// arguments.
func sameCall(a, b ToolCall) bool {
	return a.Name == b.Name && CanonicalArgs(a) == CanonicalArgs(b)
}

// Replay answers the calls of a replay fork from its origin's record.
type Replay struct {
	Origin string       // the origin's run id, for the error results
	Calls  []OriginCall // the origin's calls (OriginCalls)
}

// Answer returns the recorded result of the fork's call at step: the
// origin's call at the same step when it is the same call and not yet
// used, else the first unused origin call that is the same (step order).
// used holds the origin steps whose results the fork already replayed
// (ToolResult.Replayed of its recorded results). The result carries
// Replayed; a call the origin never made is an error result the model
// reads, with Replayed set to ReplayedNone.
func (r Replay) Answer(step string, call ToolCall, used map[string]bool) ToolResult {
	pick := -1
	for i, o := range r.Calls {
		if used[o.Step] || !sameCall(o.Call, call) {
			continue
		}
		if o.Step == step {
			pick = i
			break
		}
		if pick < 0 {
			pick = i
		}
	}
	if pick < 0 {
		return ToolResult{IsError: true, Replayed: ReplayedNone,
			Content: fmt.Sprintf("replay: %s made no call of %s with these arguments; a replay runs no tool", r.Origin, call.Name)}
	}
	o := r.Calls[pick]
	res, err := DecodeToolResult(o.Result)
	if err != nil {
		return ToolResult{IsError: true, Replayed: ReplayedNone,
			Content: fmt.Sprintf("replay: the recorded result of %s in %s is not a tool result; a replay runs no tool", o.Step, r.Origin)}
	}
	res.Settled, res.Replayed = nil, o.Step
	return res
}

// ReplayedFrom returns the origin step a recorded result was replayed
// from ("" when it was not, or it answered a call the origin never made).
func ReplayedFrom(raw json.RawMessage) string {
	r, err := DecodeToolResult(raw)
	if err != nil || r.Replayed == ReplayedNone {
		return ""
	}
	return r.Replayed
}

// ForkID is a fork's default run id: the origin's id, "-fork-", the fork
// point with its slashes as dots, "-" and 6 hex digits of a hash of the
// whole fork asked (f), e.g. "ticket-7-fork-llm.2-3fa9c1". The same fork
// asked again gets the same id (and is refused as existing); another
// agent, model, prompt or mode gets another. An id that would pass
// MaxRunID keeps the start of the origin's.
func ForkID(f Fork) string {
	b, _ := json.Marshal(f) // a struct of strings and bools always encodes
	sum := sha256.Sum256(b)
	tail := "-fork-" + strings.ReplaceAll(f.From, "/", ".") + "-" + hex.EncodeToString(sum[:3])
	origin := f.Origin
	if len(origin)+len(tail) > MaxRunID {
		origin = origin[:max(0, MaxRunID-len(tail))]
	}
	return origin + tail
}

// ReplayPolicy is the policy of a replay fork: inner's (nil: GateWrites),
// but no call waits for a person, since none runs (Replay answers it). A
// denied call stays denied.
type ReplayPolicy struct{ Inner Policy }

// Decide implements Policy.
func (p ReplayPolicy) Decide(spec ToolSpec, call ToolCall) Gate {
	inner := p.Inner
	if inner == nil {
		inner = GateWrites{}
	}
	g := inner.Decide(spec, call)
	if g.Verdict == RequireApproval {
		g.Verdict = Allow
	}
	return g
}
