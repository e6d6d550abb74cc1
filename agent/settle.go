package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Probe is a write tool's declared check of the world: a read tool, the
// arguments to call it with, and how to read its answer. When a write
// started and never recorded its result, the engine's guard calls the probe
// before it asks a person.
type Probe struct {
	// Tool is the read tool to call.
	Tool string `json:"tool"`
	// Args are its arguments: a JSON object whose strings may be templates,
	// "{{key}}" (the write's idempotency key) or "{{args.NAME}}" (the
	// write's argument NAME; "{{args.NAME.0.FIELD}}" goes deeper). A string
	// that is one template whole becomes the value itself (a number stays a
	// number); a template inside a longer string is replaced by its text.
	Args json.RawMessage `json:"args"`
	// Found is a regular expression: an answer it matches says the write
	// took effect. The step's result is then the expression's first group
	// when it has one, else the whole answer.
	Found string `json:"found"`
	// NotFound is a regular expression: an answer it matches says the
	// write did not take effect, so it runs once more.
	NotFound string `json:"not_found"`
}

// Settle says how a write that started and never recorded its result can
// be settled without a person: by its idempotency key, by its probe, or
// both. A step carries it when its tool declares either.
type Settle struct {
	// KeyArg is the argument the engine fills with Key: the tool's
	// declared idempotency key argument. "" when it declares none.
	KeyArg string `json:"key_arg,omitempty"`
	// Key is the idempotency key the engine derived for this execution
	// (IdempotencyKey); the model never chooses it.
	Key string `json:"key,omitempty"`
	// Probe is the tool's probe; nil when it declares none.
	Probe *Probe `json:"probe,omitempty"`
}

// IdempotencyKey is the key of one execution of a write: derived from the
// run key, the step and the generation (1, then one more for each retry a
// person asked for), so it is the same on every attempt and every worker.
// It is "agentrun-" and 32 hex digits.
func IdempotencyKey(runKey, step string, generation int) string {
	sum := sha256.Sum256([]byte(runKey + "\n" + step + "\n" + strconv.Itoa(max(generation, 1))))
	return "agentrun-" + hex.EncodeToString(sum[:16])
}

// The verdicts of a probe.
const (
	ProbeFound    = "found"     // the write took effect
	ProbeNotFound = "not_found" // it did not
	ProbeUnknown  = "unknown"   // the probe failed, timed out or answered unclearly
)

// ProbeAnswer is what a probe said about a write.
type ProbeAnswer struct {
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"` // ProbeFound, ProbeNotFound or ProbeUnknown
	// Answer is the probe's answer, or why it has none, for people
	// (clipped to a few hundred bytes).
	Answer string `json:"answer,omitempty"`
	// Result is the step's result in recorded form (a ToolResult) when the
	// verdict is ProbeFound.
	Result json.RawMessage `json:"result,omitempty"`
}

// String says what the probe answered, for people.
func (a ProbeAnswer) String() string {
	return fmt.Sprintf("probe %s answered %s: %s", a.Tool, a.Verdict, a.Answer)
}

// How a write was settled without a person.
const (
	SettledByProbe = "probe" // the probe found its effect, or found none and it ran again
	SettledByKey   = "key"   // it ran again with the same idempotency key
)

// Settled is carried by the result of a write that started, never recorded
// its result, and was then settled without a person: so that nothing is
// settled silently.
type Settled struct {
	By string `json:"by"` // SettledByProbe or SettledByKey
	// Probe is the probe's answer, when one was asked.
	Probe *ProbeAnswer `json:"probe,omitempty"`
	// Key is the idempotency key the write ran with, when it has one.
	Key string `json:"key,omitempty"`
	// Runs counts the times the write started, this one included.
	Runs int `json:"runs"`
}

// String says how the write was settled, for people.
func (s Settled) String() string {
	var out string
	switch {
	case s.By == SettledByProbe && s.Probe != nil && s.Probe.Verdict == ProbeFound:
		out = "settled by probe " + s.Probe.Tool + ": found, not run again"
	case s.By == SettledByProbe && s.Probe != nil:
		out = "settled by probe " + s.Probe.Tool + ": not found, ran again"
	case s.Probe != nil:
		out = "made safe by key: probe " + s.Probe.Tool + " answered " + s.Probe.Verdict + ", ran again with the same key"
	default:
		out = "made safe by key: ran again with the same key"
	}
	if s.Probe != nil && s.Probe.Answer != "" {
		out += fmt.Sprintf(" (answer: %s)", Clip(s.Probe.Answer, PreviewLen))
	}
	if s.Key != "" {
		out += " [key " + s.Key + "]"
	}
	return fmt.Sprintf("%s; runs: %d", out, s.Runs)
}

// SettledOf returns how a recorded tool result was settled, or nil.
func SettledOf(raw []byte) *Settled {
	r, err := DecodeToolResult(raw)
	if err != nil {
		return nil
	}
	return r.Settled
}
