package activities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
)

// Binding a run's catalog to the worker's own tools. The catalog is an
// activity's result, and whoever may complete an activity by hand
// (temporal activity complete) may hand a run a catalog of their own: a
// write that needs no approval, a read that is a write. So every step
// carries the content address of what the catalog says about the tools
// (Binding.Key, StepInput.Catalog), which covers every field of every
// tool, and a tool step the called tool's spec (StepInput.Spec) where the
// key does not cover it; the worker runs the step only when both are its
// own (checkBinding, checkSpec). Activities are not run again
// on replay, so the check changes nothing for steps recorded before.

// Binding is what a run's catalog says about its tools, which must be the
// worker's own: the tools key (the content address of the full specs that
// model steps offer), the agent whose child run it is and that agent's
// system prompt, and the tools as the policy sees them (names, kinds,
// approval, idempotence, settling, agent tools).
type Binding struct {
	ToolsKey string           `json:"tools_key"`
	Agent    string           `json:"agent,omitempty"`
	System   string           `json:"system,omitempty"`
	Tools    []agent.ToolSpec `json:"tools"`
}

// Binding returns what the catalog says about its tools.
func (c Catalog) Binding() Binding {
	return Binding{ToolsKey: c.ToolsKey, Agent: c.Agent, System: c.System, Tools: c.Tools}
}

// Key is the content address of the binding: the same on every worker and
// in the workflow for the same tools (a list with no tools and an absent
// one alike).
func (b Binding) Key() string {
	if b.Tools == nil {
		b.Tools = []agent.ToolSpec{}
	}
	data, err := json.Marshal(b)
	if err != nil { // a spec of plain values always encodes
		panic(fmt.Sprintf("encode a catalog's binding: %v", err))
	}
	return content.KeyOf(data)
}

// Diff names the first way in which the run's binding b differs from the
// worker's own, "" when they are the same: one phrase, such as `tool
// create_ticket: approval "never" in the run's list, "" in this worker's`.
func (b Binding) Diff(own Binding) string {
	switch {
	case b.ToolsKey != own.ToolsKey:
		return fmt.Sprintf("tools key %s in the run's list, %s in this worker's", shown(b.ToolsKey), shown(own.ToolsKey))
	case b.Agent != own.Agent:
		return fmt.Sprintf("agent %s in the run's list, %s in this worker's", shown(b.Agent), shown(own.Agent))
	case b.System != own.System:
		return fmt.Sprintf("agent %s's system prompt differs (%d bytes in the run's list, %d in this worker's)", own.Agent, len(b.System), len(own.System))
	}
	ownAt := map[string]int{}
	for i, t := range own.Tools {
		ownAt[t.Name] = i
	}
	runs := map[string]bool{}
	for _, t := range b.Tools {
		j, ok := ownAt[t.Name]
		switch {
		case !ok:
			return fmt.Sprintf("tool %s is in the run's list, not in this worker's", shown(t.Name))
		case runs[t.Name]:
			return fmt.Sprintf("tool %s is twice in the run's list", shown(t.Name))
		}
		runs[t.Name] = true
		if d := SpecDiff(t, own.Tools[j]); d != "" {
			return fmt.Sprintf("tool %s: %s", t.Name, d)
		}
	}
	for _, t := range own.Tools {
		if !runs[t.Name] {
			return fmt.Sprintf("this worker's tool %s is not in the run's list", t.Name)
		}
	}
	for i, t := range b.Tools {
		if j := ownAt[t.Name]; i != j {
			return fmt.Sprintf("tool %s is listed %s in the run's list, %s in this worker's", t.Name, ordinal(i), ordinal(j))
		}
	}
	if b.Key() != own.Key() {
		return "the lists differ in their encoding"
	}
	return ""
}

// SpecDiff names the first field in which the run's spec of a tool differs
// from the worker's own, "" when none does: `approval "never" in the run's
// list, "" in this worker's`. Descriptions and schemas are compared as a
// catalog has them: none (the content store holds them, under the tools
// key).
func SpecDiff(run, own agent.ToolSpec) string {
	own.Description, own.Schema = "", nil
	field := func(name string, r, o any) string {
		return fmt.Sprintf("%s %s in the run's list, %s in this worker's", name, r, o)
	}
	switch {
	case run.Name != own.Name:
		return field("name", shown(run.Name), shown(own.Name))
	case run.Kind != own.Kind:
		return field("kind", shown(string(run.Kind)), shown(string(own.Kind)))
	case run.Approval != own.Approval:
		return field("approval", shown(run.Approval), shown(own.Approval))
	case run.ApprovalTimeout != own.ApprovalTimeout:
		return field("approval_timeout", run.ApprovalTimeout.String(), own.ApprovalTimeout.String())
	case run.Idempotent != own.Idempotent:
		return field("idempotent", fmt.Sprint(run.Idempotent), fmt.Sprint(own.Idempotent))
	case run.IdempotencyKey != own.IdempotencyKey:
		return field("idempotency_key", shown(run.IdempotencyKey), shown(own.IdempotencyKey))
	case run.Agent != own.Agent:
		return field("agent", fmt.Sprint(run.Agent), fmt.Sprint(own.Agent))
	case run.Description != "":
		return field("description", fmt.Sprintf("of %d bytes", len(run.Description)), "none")
	case len(run.Schema) != 0:
		return field("schema", fmt.Sprintf("of %d bytes", len(run.Schema)), "none")
	}
	rp, _ := json.Marshal(run.Probe)
	op, _ := json.Marshal(own.Probe)
	if !bytes.Equal(rp, op) {
		return field("probe", probeShown(run.Probe), probeShown(own.Probe))
	}
	ra, _ := json.Marshal(run.Activity)
	oa, _ := json.Marshal(own.Activity)
	if !bytes.Equal(ra, oa) {
		return field("activity", activityShown(run.Activity), activityShown(own.Activity))
	}
	return ""
}

func activityShown(a *agent.ActivitySpec) string {
	if a == nil {
		return "none"
	}
	return shown(a.Name) + " on " + shown(a.TaskQueue)
}

// maxShown bounds the bytes of a value from a catalog that a refusal
// shows: a forged catalog's values may be of any size.
const maxShown = 80

// shown quotes a catalog's value for a refusal, cut to maxShown bytes.
func shown(s string) string {
	if len(s) <= maxShown {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxShown], len(s))
}

func probeShown(p *agent.Probe) string {
	if p == nil {
		return "none"
	}
	return "by " + shown(p.Tool)
}

func ordinal(i int) string {
	return fmt.Sprintf("#%d", i+1)
}

// ownBinding returns the binding of the catalog this worker lists for
// the activities' run (a top-level run, or a child run of a.agent), and
// its key; computed once per tool set.
func (a *Activities) ownBinding() (Binding, string, error) {
	if v, ok := bindings.Load(a.Exec.Tools); ok {
		b := v.(ownBound)
		return b.b, b.key, nil
	}
	key, err := a.Exec.ToolsKey()
	if err != nil {
		return Binding{}, "", fmt.Errorf("the key of this worker's tools: %w", err)
	}
	system := a.system
	if a.agent == "" {
		system = a.Exec.System
	}
	b := Binding{ToolsKey: key, Agent: a.agent, System: system, Tools: policyView(a.Exec.Tools.Specs())}
	bound := ownBound{b, b.Key()}
	bindings.Store(a.Exec.Tools, bound)
	return bound.b, bound.key, nil
}

// bindings caches each tool set's binding (ownBound) by *tools.Set: a
// worker's sets (its own and one per agent) live as long as it does.
var bindings sync.Map

type ownBound struct {
	b   Binding
	key string
}

// policyView is specs as a catalog lists them: without descriptions and
// schemas.
func policyView(specs []agent.ToolSpec) []agent.ToolSpec {
	out := make([]agent.ToolSpec, 0, len(specs))
	for _, t := range specs {
		t.Description, t.Schema = "", nil
		out = append(out, t)
	}
	return out
}

// checkBinding refuses a step whose run's catalog is not this worker's own
// (StepInput.Catalog is not the key of ownBinding). Its failure's details
// are the worker's own binding, so that the run can name the difference
// (Binding.Diff). A step without a catalog key was scheduled by a build
// before this check, or by a run whose catalog has no tools key (listed
// before there was one): it is checked as before.
func (a *Activities) checkBinding(in StepInput) error {
	if in.Catalog == "" {
		return nil
	}
	own, key, err := a.ownBinding()
	if err != nil {
		return fmt.Errorf("step %s: %w", in.Step.Name, err)
	}
	if in.Catalog == key {
		return nil
	}
	return refusedWith(own, "step %s runs with a tool list that is not this worker's (key %s, this worker's %s): the run's tool listing did not come from this worker's tools file and MCP servers, or they changed since the run started", in.Step.Name, shownKey(in.Catalog), key)
}

// checkSpec refuses a tool step whose run has the called tool's spec other
// than this worker has it (any field: kind, approval, its timeout,
// idempotence, settling, agent): the run's policy decided the call by that
// spec. A step without one was scheduled by a build before it carried it.
func (a *Activities) checkSpec(in StepInput) error {
	if in.Spec == nil {
		return nil
	}
	name := in.Step.Call.Name
	t, ok := a.Exec.Tools.Lookup(name)
	if !ok {
		return refused("step %s calls tool %q, which this worker does not offer; it offers %s", in.Step.Name, name, a.offered())
	}
	if d := SpecDiff(*in.Spec, t.Spec()); d != "" {
		return refused("step %s calls tool %s with a spec that is not this worker's: %s (the run's tool listing did not come from this worker's tools file and MCP servers, or they changed since the run started)", in.Step.Name, name, d)
	}
	return nil
}

// MalformedCatalog returns why a catalog that a run's listing returned
// cannot be a worker's listing for a run of agent ("" for a top-level run),
// or "" when it can: its tools key is not a content key, its agent is
// another, a tool's name is not a tool name (agent.ValidToolName) or is
// listed twice, a kind, an approval or an approval timeout is not one a
// spec takes, or an agent tool is not a read. The workflow refuses such a
// catalog before any step; a well-formed one that is not this worker's is
// refused by the steps (checkBinding).
func MalformedCatalog(c Catalog, forAgent string) string {
	if err := content.ValidKey(c.ToolsKey); err != nil {
		return fmt.Sprintf("its tools key %s is not a content key", shown(c.ToolsKey))
	}
	if c.Agent != forAgent {
		return fmt.Sprintf("it is the catalog of %s, and this run is %s", runOf(c.Agent), runOf(forAgent))
	}
	seen := map[string]bool{}
	for _, t := range c.Tools {
		switch {
		case !agent.ValidToolName(t.Name):
			return fmt.Sprintf("tool %s: the name is not %s", shown(t.Name), agent.ToolNameRule)
		case seen[t.Name]:
			return fmt.Sprintf("tool %s is listed twice", t.Name)
		case t.Kind != agent.KindRead && t.Kind != agent.KindWrite:
			return fmt.Sprintf("tool %s: kind %s is not %q or %q", t.Name, shown(string(t.Kind)), agent.KindRead, agent.KindWrite)
		case !validApproval(t.Approval):
			return fmt.Sprintf("tool %s: approval %s is not \"\", %q, %q or %q", t.Name, shown(t.Approval), agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny)
		case t.ApprovalTimeout < 0:
			return fmt.Sprintf("tool %s: approval_timeout %s is negative", t.Name, t.ApprovalTimeout)
		case t.Agent && t.Kind != agent.KindRead:
			return fmt.Sprintf("agent tool %s: kind %q, and an agent tool is a read", t.Name, t.Kind)
		}
		seen[t.Name] = true
	}
	return ""
}

func validApproval(s string) bool {
	switch s {
	case "", agent.ApprovalAlways, agent.ApprovalNever, agent.ApprovalDeny:
		return true
	}
	return false
}

func runOf(agentName string) string {
	if agentName == "" {
		return "a top-level run"
	}
	return "a child run of agent " + shown(agentName)
}
