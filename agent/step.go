package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kind classifies a step.
type Kind string

// The step kinds.
const (
	KindModel Kind = "model" // a model call
	KindRead  Kind = "read"  // a tool without side effects: safe to run again
	KindWrite Kind = "write" // a tool with side effects: never guessed at
)

// Valid reports whether k is one of the step kinds.
func (k Kind) Valid() bool {
	return k == KindModel || k == KindRead || k == KindWrite
}

// ModelStep names the n-th model call of a run (n from 1): "llm/N".
func ModelStep(n int) string { return "llm/" + strconv.Itoa(n) }

// ToolStep names the i-th tool call (i from 0) requested by model call n:
// "tool/N/I/NAME". The marker of a gated call is its step name.
func ToolStep(n, i int, name string) string {
	return fmt.Sprintf("tool/%d/%d/%s", n, i, name)
}

var (
	modelStepRE = regexp.MustCompile(`^llm/[1-9][0-9]*$`)
	toolStepRE  = regexp.MustCompile(`^tool/[1-9][0-9]*/(0|[1-9][0-9]*)/[^/\s]+$`)
)

// StepFormat says what a valid step name looks like, for error messages.
const StepFormat = `"llm/N" or "tool/N/I/NAME", e.g. "tool/2/0/create_ticket"`

// ValidStep reports whether s is a well-formed step name.
func ValidStep(s string) bool {
	return modelStepRE.MatchString(s) || toolStepRE.MatchString(s)
}

// IsToolStep reports whether s names a tool step.
func IsToolStep(s string) bool { return strings.HasPrefix(s, "tool/") && ValidStep(s) }

// StepTurn returns the model call a step belongs to: N for "llm/N" and
// "tool/N/I/NAME" (tool reports which), 0 for anything else.
func StepTurn(name string) (n int, tool bool) {
	rest, ok := strings.CutPrefix(name, "llm/")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "tool/"); !ok {
			return 0, false
		}
		tool = true
		rest, _, _ = strings.Cut(rest, "/")
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, tool
}
