package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// templateRE matches one template of a probe's arguments: {{key}} or
// {{args.PATH}}, and anything else between double braces (an error).
var templateRE = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

// TemplateFormat says what a probe's templates look like, for errors.
const TemplateFormat = `"{{key}}" (the idempotency key) or "{{args.NAME}}" (the write's argument NAME; "{{args.NAME.0.FIELD}}" goes deeper)`

// Template is one template of a probe's arguments.
type Template struct {
	Key  bool     // {{key}}
	Path []string // {{args.A.B}}: ["A", "B"]
}

// Templates returns the templates the probe's arguments use. A
// template that is neither {{key}} nor {{args.NAME...}}, or arguments that
// are not a JSON object, are an error naming what is valid.
func (p Probe) Templates() ([]Template, error) {
	var args map[string]any
	if err := json.Unmarshal(p.Args, &args); err != nil || args == nil {
		return nil, fmt.Errorf("args: %s is not a JSON object; want the probe tool's arguments, e.g. {\"request_id\": \"{{key}}\"}", clipJSON(p.Args))
	}
	var out []Template
	var err error
	walkStrings(args, func(s string) string {
		for _, m := range templateRE.FindAllStringSubmatch(s, -1) {
			t, terr := parseTemplate(m[1])
			if terr != nil && err == nil {
				err = terr
			}
			out = append(out, t)
		}
		return s
	})
	return out, err
}

func parseTemplate(inner string) (Template, error) {
	f := strings.TrimSpace(inner)
	if f == "key" {
		return Template{Key: true}, nil
	}
	if rest, ok := strings.CutPrefix(f, "args."); ok {
		path := strings.Split(rest, ".")
		if !slices.Contains(path, "") {
			return Template{Path: path}, nil
		}
	}
	return Template{}, fmt.Errorf("template {{%s}} names an unknown field; want %s", inner, TemplateFormat)
}

// RenderArgs returns the probe's arguments with its templates replaced: key
// for {{key}} and the value at the path in args (the write's arguments,
// with its key filled in) for {{args.PATH}}. A path args does not hold is
// an error.
func (p Probe) RenderArgs(args json.RawMessage, key string) (json.RawMessage, error) {
	var tmpl map[string]any
	if err := json.Unmarshal(p.Args, &tmpl); err != nil || tmpl == nil {
		return nil, fmt.Errorf("probe args %s are not a JSON object", clipJSON(p.Args))
	}
	var write any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&write); err != nil {
		return nil, fmt.Errorf("the write's arguments are not JSON: %v", err)
	}
	var err error
	value := func(inner string) (any, bool) {
		t, terr := parseTemplate(inner)
		if terr != nil {
			err = terr
			return nil, false
		}
		if t.Key {
			return key, true
		}
		v, ok := lookupPath(write, t.Path)
		if !ok {
			err = fmt.Errorf("the write's arguments have no %s", strings.Join(t.Path, "."))
		}
		return v, ok
	}
	var render func(v any) any
	render = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = render(e)
			}
		case []any:
			for i, e := range x {
				x[i] = render(e)
			}
		case string:
			if m := templateRE.FindStringSubmatch(x); m != nil && m[0] == x {
				if val, ok := value(m[1]); ok {
					return val
				}
				return x
			}
			return templateRE.ReplaceAllStringFunc(x, func(t string) string {
				val, ok := value(t[2 : len(t)-2])
				if !ok {
					return t
				}
				if s, isStr := val.(string); isStr {
					return s
				}
				b, _ := json.Marshal(val)
				return string(b)
			})
		}
		return v
	}
	out := render(tmpl)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// lookupPath returns the value at path in v: object members by name, array
// elements by index.
func lookupPath(v any, path []string) (any, bool) {
	for _, seg := range path {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[seg]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// walkStrings calls fn on every string value inside v.
func walkStrings(v any, fn func(string) string) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case string:
		fn(x)
	}
}

func clipJSON(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	return Clip(string(b), 40)
}

// FillKey returns args, a JSON object, with its member name set to key.
func FillKey(args json.RawMessage, name, key string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) == 0 {
		m = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return nil, fmt.Errorf("the arguments %s are not a JSON object, so the idempotency key %q cannot be set", clipJSON(args), name)
	}
	k, _ := json.Marshal(key)
	m[name] = k
	return json.Marshal(m)
}
