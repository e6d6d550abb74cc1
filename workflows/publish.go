package workflows

import (
	"strconv"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
)

// publish makes the state visible: search attributes and current details.
func (r *execution) publish() {
	var step *string
	set := func(v string) { step = &v }
	switch r.state.Status {
	case agent.StatusAwaitingApproval:
		markers := make([]string, len(r.state.Pending))
		for i, p := range r.state.Pending {
			markers[i] = p.Marker
		}
		set(StepAttr(markers))
	case agent.StatusIndeterminate:
		set(r.state.Indeterminate)
	}
	if c := r.state.Child; c != nil && c.waits() {
		// The wait is a child run's: the value names it ("MARKER in run
		// CHILD"), which also keeps a query for the marker to the child.
		set(ChildStepAttr(r.state, c.Deepest().Run))
	}
	if err := upsertAttrs(r.ctx, string(r.state.Status), step, r.fewerActions); err != nil {
		workflow.GetLogger(r.ctx).Warn("upsert search attributes", "error", err)
	}
	r.showDetails()
	r.statusEvent()
	r.report()
}

// checkAttrs takes versionFewerActions at the execution's start and, under
// it, makes a first execution's AgentRunForkOf its own (checkForkAttr).
func (r *execution) checkAttrs() {
	r.fewerActions = r.v.of(r.ctx, versionFewerActions) >= 1
	if !r.fewerActions || r.in.Continued != nil {
		return
	}
	origin := ""
	if r.in.Fork != nil {
		origin = r.in.Fork.Origin
	}
	if err := checkForkAttr(r.ctx, origin); err != nil {
		workflow.GetLogger(r.ctx).Warn("upsert search attributes", "error", err)
	}
}

// StepAttr is the AgentRunStep value for pending markers: the markers
// joined by commas, or, when that is longer than MaxStepAttr, the first
// ones that fit and ",+N more" (the state query lists them all).
func StepAttr(markers []string) string {
	all := strings.Join(markers, ",")
	if len(all) <= MaxStepAttr {
		return all
	}
	var b strings.Builder
	for i, m := range markers {
		more := ",+" + strconv.Itoa(len(markers)-i) + " more"
		sep := ""
		if i > 0 {
			sep = ","
		}
		if b.Len()+len(sep)+len(m)+len(",+"+strconv.Itoa(len(markers)-i-1)+" more") > MaxStepAttr {
			if i == 0 {
				more = more[1:]
			}
			return b.String() + more
		}
		b.WriteString(sep + m)
	}
	return b.String()
}

// showDetails renders the current details; unlike publish it adds no
// command to the history.
func (r *execution) showDetails() {
	workflow.SetCurrentDetails(r.ctx, details(workflow.GetInfo(r.ctx).Namespace, r.id, &r.state))
}
