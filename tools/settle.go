package tools

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrun/agentrun/agent"
)

// checkProbe checks the rules of a probe that need no tools: every field
// given, the arguments an object of known templates, and the expressions
// valid.
func checkProbe(p agent.Probe) error {
	switch {
	case p.Tool == "":
		return fmt.Errorf(`"tool" is missing; want the name of a read tool that checks whether the write took effect`)
	case len(p.Args) == 0:
		return fmt.Errorf(`"args" is missing; want the probe tool's arguments, e.g. {"request_id": "{{key}}"}`)
	case p.Found == "":
		return fmt.Errorf(`"found" is missing; want a regular expression matching an answer that says the write took effect`)
	case p.NotFound == "":
		return fmt.Errorf(`"not_found" is missing; want a regular expression matching an answer that says it did not`)
	}
	if _, err := p.Templates(); err != nil {
		return err
	}
	for _, e := range []struct{ field, re string }{{"found", p.Found}, {"not_found", p.NotFound}} {
		if _, err := regexp.Compile(e.re); err != nil {
			return fmt.Errorf("%s: %q is not a regular expression: %v", e.field, e.re, err)
		}
	}
	return nil
}

// settleRules checks how the tools declare to be settled, now that every
// tool is known, and hides each write's idempotency key argument from the
// model (the engine fills it). field names a tool's override in errors.
func settleRules(ts []Tool, field func(name string) string) ([]Tool, error) {
	for i, t := range ts {
		spec := t.Spec()
		if spec.IdempotencyKey == "" && spec.Probe == nil {
			continue
		}
		f := field(spec.Name)
		if spec.Kind == agent.KindRead {
			what := "idempotency_key"
			if spec.Probe != nil {
				what = "probe"
			}
			return nil, fmt.Errorf("%s.%s: %s is a read; an idempotency key or a probe is for a write (set \"kind\": \"write\" if it has side effects)", f, what, spec.Name)
		}
		props := schemaProps(spec.Schema)
		if k := spec.IdempotencyKey; k != "" && !slices.Contains(props, k) {
			return nil, fmt.Errorf("%s.idempotency_key: %q is not an argument of %s; its arguments are: %s", f, k, spec.Name, listOrNone(props))
		}
		if p := spec.Probe; p != nil {
			if err := cmp.Or(CheckProbeTool(*p, ts), checkTemplates(*p, spec)); err != nil {
				return nil, fmt.Errorf("%s.probe: %w", f, err)
			}
		}
		if spec.IdempotencyKey != "" {
			ts[i] = withSchema(t, hideArg(spec.Schema, spec.IdempotencyKey))
		}
	}
	return ts, nil
}

// CheckProbe checks a write's probe on its own, as the tools file's
// probes are checked: every field given, the arguments an object of known
// templates naming the write's idempotency key or its arguments (by its
// schema), and the expressions valid. The error names the probe's field
// ("found: ...") and what is valid; the caller says whose probe it is.
// CheckProbeTool checks the rest, once the tools beside the write are known.
func CheckProbe(p agent.Probe, write agent.ToolSpec) error {
	return cmp.Or(checkProbe(p), checkTemplates(p, write))
}

// CheckProbeTool checks a probe's tool against the tools offered beside
// the write (ts): offered, a read, and taking the probe's
// arguments. The error names the field and the read tools of ts.
func CheckProbeTool(p agent.Probe, ts []Tool) error {
	var reads []string
	for _, t := range ts {
		if t.Spec().Kind == agent.KindRead && !t.Spec().Agent {
			reads = append(reads, t.Spec().Name)
		}
	}
	var probe agent.ToolSpec
	found := false
	for _, t := range ts {
		if t.Spec().Name == p.Tool {
			probe, found = t.Spec(), true
		}
	}
	switch {
	case !found:
		return fmt.Errorf("tool: %q is not a tool that is offered; want a read tool: %s", p.Tool, listOrNone(reads))
	case probe.Kind != agent.KindRead:
		return fmt.Errorf("tool: %q is a write; a probe must not change anything: want a read tool: %s", p.Tool, listOrNone(reads))
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(p.Args, &args) // an object: checkProbe said so
	if props := schemaProps(probe.Schema); props != nil {
		for _, k := range sortedKeys(args) {
			if !slices.Contains(props, k) {
				return fmt.Errorf("args: %q is not an argument of %s; its arguments are: %s", k, p.Tool, listOrNone(props))
			}
		}
	}
	return nil
}

// checkTemplates checks that the templates of a probe's arguments name the
// write's idempotency key or its arguments.
func checkTemplates(p agent.Probe, write agent.ToolSpec) error {
	ts, err := p.Templates()
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Key {
			if write.IdempotencyKey == "" {
				return fmt.Errorf(`args: {{key}} names the idempotency key, and %s has none; declare "idempotency_key" or use {{args.NAME}}`, write.Name)
			}
			continue
		}
		if at, valid := schemaPath(write.Schema, t.Path); at != "" {
			if !strings.Contains(at, ".") {
				return fmt.Errorf("args: {{args.%s}}: %q is not an argument of %s; its arguments are: %s", strings.Join(t.Path, "."), at, write.Name, listOrNone(valid))
			}
			return fmt.Errorf("args: {{args.%s}}: %s's arguments have no %q; valid there: %s", strings.Join(t.Path, "."), write.Name, at, listOrNone(valid))
		}
	}
	return nil
}

// schemaProps returns the names of the top-level properties of a JSON
// schema, sorted; nil when it describes none.
func schemaProps(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	return sortedKeys(s.Properties)
}

// schemaPath checks path against schema as far as the schema describes it:
// a name must be among an object's properties, a number indexes an array.
// It returns "" when the path is valid, else the part of the path that is
// not and the names valid in its place.
func schemaPath(schema json.RawMessage, path []string) (string, []string) {
	for i, seg := range path {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Items      json.RawMessage            `json:"items"`
		}
		if json.Unmarshal(schema, &s) != nil {
			return "", nil
		}
		if _, err := strconv.Atoi(seg); err == nil && len(s.Items) > 0 {
			schema = s.Items
			continue
		}
		if len(s.Properties) == 0 && i > 0 {
			return "", nil // the schema says no more
		}
		sub, ok := s.Properties[seg]
		if !ok {
			return strings.Join(path[:i+1], "."), sortedKeys(s.Properties)
		}
		schema = sub
	}
	return "", nil
}

// hideArg returns schema without the property name (and without it among
// the required ones).
func hideArg(schema json.RawMessage, name string) json.RawMessage {
	var s map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil {
		return schema
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(s["properties"], &props) == nil && props != nil {
		delete(props, name)
		s["properties"], _ = json.Marshal(props)
	}
	var req []string
	if json.Unmarshal(s["required"], &req) == nil && req != nil {
		req = slices.DeleteFunc(req, func(r string) bool { return r == name })
		s["required"], _ = json.Marshal(req)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return schema
	}
	return b
}

// withSchema returns t with the schema the model sees replaced.
func withSchema(t Tool, schema json.RawMessage) Tool {
	o, ok := t.(*overridden)
	if !ok {
		o = &overridden{Tool: t, spec: t.Spec()}
	}
	c := *o
	c.spec.Schema = schema
	return &c
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
