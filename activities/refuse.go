package activities

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
)

// ErrTypeRefused: the step does not match this worker's own tools (a tool
// it does not offer, a write sent as a read or as idempotent, a tool spec
// key it did not list). Nothing ran; retrying cannot help.
const ErrTypeRefused = "StepRefused"

// maxNamed bounds the tool names a refusal lists.
const maxNamed = 10

// refused is the non-retryable failure of a step the worker refuses.
func refused(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeRefused, nil)
}

// refusedWith is refused with details: what the worker has instead.
func refusedWith(details any, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeRefused, nil, details)
}

// checkTool checks a tool step against the worker's own tools: the
// activity's input comes from whatever the workflow trusted, and the
// worker's configuration alone says what a tool is. A tool the worker does
// not offer, one it knows as a write arriving as a read (or as idempotent,
// or settled by another key argument or a probe its tool does not
// declare), and one its policy denies are refused before anything runs.
func (a *Activities) checkTool(s agent.Step) error {
	name := s.Call.Name
	t, ok := a.Exec.Tools.Lookup(name)
	if !ok {
		return refused("step %s calls tool %q, which this worker does not offer; it offers %s", s.Name, name, a.offered())
	}
	spec := t.Spec()
	if spec.Agent {
		return refused("step %s calls agent tool %q as a tool; an agent tool runs as a child run of its engine", s.Name, name)
	}
	gate := agent.GateWrites{}.Decide(spec, *s.Call)
	switch {
	case s.Kind != agent.KindRead && s.Kind != agent.KindWrite:
		return refused("step %s runs tool %q as kind %q; a tool step is a %s (as this worker knows %s)", s.Name, name, s.Kind, gate.Kind, name)
	case gate.Kind == agent.KindWrite && s.Kind != agent.KindWrite:
		return refused("step %s runs tool %q as a %s; this worker knows %s as a write, which runs only as a write", s.Name, name, s.Kind, name)
	case s.Kind == agent.KindWrite && s.Idempotent && !spec.Idempotent:
		return refused("step %s marks tool %q idempotent; this worker's %s is not, so it runs only through the write guard", s.Name, name, name)
	case gate.Verdict == agent.Deny:
		return refused("step %s calls tool %q, which this worker's policy denies (%s)", s.Name, name, gate.Reason)
	}
	if st := s.Settle; st != nil {
		if st.KeyArg != spec.IdempotencyKey && st.KeyArg != "" {
			return refused("step %s fills idempotency key argument %q of tool %q; this worker's %s declares %s", s.Name, st.KeyArg, name, name, declared(spec.IdempotencyKey))
		}
		if st.Probe != nil && spec.Probe == nil {
			return refused("step %s settles tool %q with probe %s; this worker's %s declares no probe", s.Name, name, st.Probe.Tool, name)
		}
	}
	return nil
}

func declared(keyArg string) string {
	if keyArg == "" {
		return "none"
	}
	return fmt.Sprintf("%q", keyArg)
}

// offered lists the worker's tool names, at most maxNamed of them.
func (a *Activities) offered() string {
	specs := a.Exec.Tools.Specs()
	if len(specs) == 0 {
		return "no tools"
	}
	names := make([]string, 0, min(len(specs), maxNamed))
	for _, t := range specs[:min(len(specs), maxNamed)] {
		names = append(names, t.Name)
	}
	s := strings.Join(names, ", ")
	if n := len(specs) - maxNamed; n > 0 {
		s += fmt.Sprintf(" and %d more", n)
	}
	return s
}

// checkModel checks the tool-spec key a model step names against the key
// of the tools this worker lists (cached per tool set): the model is
// offered only the worker's own tools. "" names the worker's own tools:
// in a step that carries no catalog key (scheduled before catalogs were
// bound, by a run listed before tools keys), and in one that carries it,
// since the catalog's key covers the tools key (Binding.ToolsKey) and
// checkBinding refuses a catalog that is not the worker's own. Builds up
// to this one name the key in every bound step, and their workers refuse
// a bound step without it: a later build may leave it out (about 80 B of
// history a model step) once no worker of those builds polls the queue.
func (a *Activities) checkModel(in StepInput) error {
	s := in.Step
	key := s.Model.Tools
	if key == "" {
		return nil
	}
	own, err := a.Exec.ToolsKey()
	if err != nil {
		return fmt.Errorf("step %s: the key of this worker's tools: %w", s.Name, err)
	}
	if key != own {
		return refused("step %s offers the model tool specs %s; this worker lists %s (its tools file or MCP servers differ from the ones the run started with)", s.Name, shownKey(key), own)
	}
	return nil
}

// shownKey is a content key as a refusal shows it: as it is when it is
// one, else quoted and cut (shown).
func shownKey(key string) string {
	if content.ValidKey(key) == nil {
		return key
	}
	return shown(key)
}
