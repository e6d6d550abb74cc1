package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
)

// ErrOutcomeUnknown is what a tool returns, as it is or through
// [OutcomeUnknown], when it cannot tell whether its effect happened: a
// request that timed out after it was sent, a connection cut before the
// answer. For a write, the run then stops as Indeterminate until a person
// (or the tool's idempotency key or probe) settles it; a read is run again.
//
// From an activity tool's activity, return it unwrapped (ErrOutcomeUnknown
// or OutcomeUnknown(err)): Temporal carries an activity's error to the run
// as a message and a type, the Go type's name, and only an
// *OutcomeUnknownError's is recognized there.
var ErrOutcomeUnknown error = &OutcomeUnknownError{}

// OutcomeUnknownError is the error of a tool call whose effect may or may
// not have happened: errors.Is(err, ErrOutcomeUnknown).
type OutcomeUnknownError struct {
	// Err is what went wrong; nil for none given.
	Err error
}

func (e *OutcomeUnknownError) Error() string {
	if e.Err == nil {
		return "outcome unknown"
	}
	return "outcome unknown: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// OutcomeUnknown wraps err so that errors.Is(err, ErrOutcomeUnknown): the
// tool's effect may or may not have happened.
func OutcomeUnknown(err error) error {
	return &OutcomeUnknownError{Err: err}
}

// ToolOptions describe a tool written in Go (see [NewTool]).
type ToolOptions struct {
	// Name is the tool's name as the model sees it: 1 to 64 letters,
	// digits, '_' or '-'. Required.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Write marks a tool with side effects in the world (a ticket, an
	// email, a refund). A write runs at most once per call: one that
	// started and never recorded its result is Indeterminate. Default
	// false: a read, run again whenever an attempt is interrupted.
	Write bool
	// Idempotent marks a write that is safe to run again, so an
	// interrupted call is retried instead of becoming Indeterminate.
	Idempotent bool
	// Approval is "" (the worker's policy decides: it gates every write),
	// "always", "never" or "deny".
	Approval string
	// ApprovalTimeout denies a call that waited this long for approval.
	// Default 0: it waits as long as it takes.
	ApprovalTimeout time.Duration
	// IdempotencyKey names a string field of the tool's input (by its JSON
	// name) that the engine fills with a key of its own, the same for
	// every attempt of one call; the model never sees it. Default "":
	// none. Only for a write.
	IdempotencyKey string
	// Timeout bounds one call. Default 0: two minutes. A write that
	// outlasts it is Indeterminate, unless its Probe or IdempotencyKey
	// settles it.
	Timeout time.Duration
	// Probe is how the engine asks the world whether an interrupted call
	// of this write took effect. Default nil: none. Only for a write.
	Probe *Probe
}

// Probe is a write's check of the world: when an attempt of the write
// started and never recorded its result (the worker died, the call timed
// out, the tool returned [ErrOutcomeUnknown]), the engine calls a read
// tool of the same agent and reads its answer, before it would stop the
// run as Indeterminate for a person. An answer Found matches settles the
// call as done; one NotFound matches runs the write once more; a failed
// probe, or an answer both or neither match, leaves the call to a person
// (or to its IdempotencyKey). A probe runs without approval. Every field
// is required.
type Probe struct {
	// Tool names the read tool to call: a tool of the same agent, not a
	// write. Register checks it.
	Tool string
	// Args are the read tool's arguments, by their JSON names. A string
	// value may be a template: "{{key}}" is the write's idempotency key
	// (ToolOptions.IdempotencyKey), "{{args.NAME}}" the write's argument
	// NAME ("{{args.NAME.0.FIELD}}" goes deeper). A string that is one
	// template whole becomes that value (a number stays a number); inside
	// a longer string, its text.
	Args map[string]any
	// Found is a regular expression: an answer it matches says the write
	// took effect. The call's result is then its first group when it has
	// one, else the whole answer, and the write does not run again.
	Found string
	// NotFound is a regular expression: an answer it matches says the
	// write did not take effect, so it runs once more.
	NotFound string
}

// Tool is a tool written in Go: a typed function the model can call,
// made by [NewTool].
type Tool struct {
	spec    agent.ToolSpec
	timeout time.Duration
	schema  *jsonschema.Resolved
	run     func(ctx context.Context, args json.RawMessage) (agent.ToolResult, error)
	// input decodes and checks a call's arguments and encodes them as In.
	input func(args json.RawMessage) (json.RawMessage, string)
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewTool makes a tool of fn. The schema the model sees is derived from In
// (a struct, with `json` tags for the argument names and `jsonschema` tags
// for their descriptions); a call's arguments are checked against it
// before fn runs, and a call that does not match is answered to the model
// with what was wrong, without calling fn.
//
// What fn returns decides what happens:
//   - a result: the model reads Out (a string as it is, anything else as
//     JSON);
//   - an ordinary error: the model reads its message as a failed call. For
//     a write, return one only when the effect certainly did not happen;
//   - an error matching [ErrOutcomeUnknown], or a panic: for a write, the run
//     stops as Indeterminate; a read is run again.
//
// NewTool returns an error naming the tool when the options or In are not
// usable (no schema can describe a channel or a func).
func NewTool[In, Out any](opts ToolOptions, fn func(ctx context.Context, in In) (Out, error)) (*Tool, error) {
	if !toolName.MatchString(opts.Name) {
		return nil, fmt.Errorf("tool %q: the name must be 1 to 64 letters, digits, '_' or '-'", opts.Name)
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %s: the function is nil", opts.Name)
	}
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: no JSON schema describes its input %s: %v", opts.Name, reflect.TypeFor[In](), err)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("tool %s: its input %s is not a struct; a model passes arguments as a JSON object", opts.Name, reflect.TypeFor[In]())
	}
	spec, err := opts.spec(schema)
	if err != nil {
		return nil, err
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s: the schema of %s does not resolve: %v", opts.Name, reflect.TypeFor[In](), err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: encode the schema: %v", opts.Name, err)
	}
	spec.Schema = raw
	if spec.Probe, err = opts.probe(spec); err != nil {
		return nil, err
	}
	if k := opts.IdempotencyKey; k != "" {
		// The engine fills the key: the model neither sees nor gives it.
		if spec.Schema, err = withoutProperty(schema, k); err != nil {
			return nil, fmt.Errorf("tool %s: encode the schema: %v", opts.Name, err)
		}
	}
	t := &Tool{spec: spec, timeout: opts.Timeout, schema: resolved}
	t.run = func(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
		var in In
		if msg := t.decode(args, &in); msg != "" {
			return agent.ToolResult{IsError: true, Content: msg}, nil
		}
		out, err := fn(ctx, in)
		if err != nil {
			return agent.ToolResult{}, err
		}
		return encodeOut(out)
	}
	t.input = func(args json.RawMessage) (json.RawMessage, string) {
		var in In
		if msg := t.decode(args, &in); msg != "" {
			return nil, msg
		}
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Sprintf("invalid arguments for %s: %v", t.spec.Name, err)
		}
		return b, ""
	}
	return t, nil
}

// spec is the tool's spec from the options, checked; schema is In's.
func (o ToolOptions) spec(schema *jsonschema.Schema) (agent.ToolSpec, error) {
	s := agent.ToolSpec{Name: o.Name, Description: o.Description, Kind: agent.KindRead, Idempotent: o.Idempotent,
		Approval: o.Approval, ApprovalTimeout: o.ApprovalTimeout, IdempotencyKey: o.IdempotencyKey}
	if o.Write {
		s.Kind = agent.KindWrite
	}
	switch o.Approval {
	case "", agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny:
	default:
		return s, fmt.Errorf("tool %s: approval %q; want \"\" (the policy decides), %q, %q or %q", o.Name, o.Approval, agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny)
	}
	if o.ApprovalTimeout < 0 || o.Timeout < 0 {
		return s, fmt.Errorf("tool %s: a negative timeout; want a positive duration, or 0 for the default", o.Name)
	}
	if k := o.IdempotencyKey; k != "" {
		if !o.Write {
			return s, fmt.Errorf("tool %s: an idempotency key on a read; only a write takes one", o.Name)
		}
		p, ok := schema.Properties[k]
		if !ok || p.Type != "string" {
			return s, fmt.Errorf("tool %s: idempotency key %q is not a string field of its input; want the JSON name of one", o.Name, k)
		}
	}
	return s, nil
}

// probe is the tool's probe from the options, checked as far as it can be
// without the other tools (Register checks its tool); spec is the tool's.
func (o ToolOptions) probe(spec agent.ToolSpec) (*agent.Probe, error) {
	p := o.Probe
	if p == nil {
		return nil, nil
	}
	if !o.Write {
		return nil, fmt.Errorf("tool %s: a probe on a read; only a write takes one", o.Name)
	}
	ap := &agent.Probe{Tool: p.Tool, Found: p.Found, NotFound: p.NotFound}
	if p.Args != nil {
		args, err := json.Marshal(p.Args)
		if err != nil {
			return nil, fmt.Errorf("tool %s: probe: args: not JSON: %v", o.Name, err)
		}
		ap.Args = args
	}
	if err := tools.CheckProbe(*ap, spec); err != nil {
		return nil, fmt.Errorf("tool %s: probe: %v", o.Name, err)
	}
	return ap, nil
}

// withoutProperty is schema without its property name, encoded.
func withoutProperty(schema *jsonschema.Schema, name string) (json.RawMessage, error) {
	c := *schema
	c.Properties = maps.Clone(schema.Properties)
	delete(c.Properties, name)
	c.Required = slices.DeleteFunc(slices.Clone(schema.Required), func(r string) bool { return r == name })
	return json.Marshal(&c)
}

// decode checks args against the tool's schema and decodes them into in;
// it returns what was wrong, for the model, or "".
func (t *Tool) decode(args json.RawMessage, in any) string {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Sprintf("invalid arguments for %s: not JSON: %v", t.spec.Name, err)
	}
	if err := t.schema.Validate(v); err != nil {
		return fmt.Sprintf("invalid arguments for %s: %v", t.spec.Name, err)
	}
	if err := json.Unmarshal(args, in); err != nil {
		return fmt.Sprintf("invalid arguments for %s: %v", t.spec.Name, err)
	}
	return ""
}

// encodeOut is the result the model reads for out.
func encodeOut(out any) (agent.ToolResult, error) {
	if s, ok := out.(string); ok {
		return agent.ToolResult{Content: s}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("encode the result: %w", err)
	}
	return agent.ToolResult{Content: string(b)}, nil
}

// Spec is the tool as the engine and the policy see it: its name, kind,
// approval and schema.
func (t *Tool) Spec() agent.ToolSpec { return t.spec }

// Input checks a call's arguments as Call does and returns them encoded as
// the tool's input type, or what was wrong, for the model: the input of an
// activity tool's activity.
func (t *Tool) Input(args json.RawMessage) (input json.RawMessage, wrong string) {
	return t.input(args)
}

// Timeout is how long one call may take; 0 for the default.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// Call runs the tool on a call's arguments, as the engine does. An ordinary
// error of the tool's function comes back as a failed result the model
// reads; an error is returned only when the outcome is unknown (the
// function said so, or panicked), or the result could not be encoded.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (res agent.ToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = agent.ToolResult{}, OutcomeUnknown(fmt.Errorf("tool %s panicked: %v\n%s", t.spec.Name, p, debug.Stack()))
		}
	}()
	res, err = t.run(ctx, args)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, ErrOutcomeUnknown), ctx.Err() != nil:
		return agent.ToolResult{}, err
	default:
		return agent.ToolResult{IsError: true, Content: err.Error()}, nil
	}
}
