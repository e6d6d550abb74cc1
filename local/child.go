package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// Child runs. A call of an agent tool (agent.ToolSpec.Agent) runs the
// agent as a nested local run with its own journal in the same Store: its
// run id is agent.ChildRunID of the caller's run id and the call's step, its
// input agent.ChildInput of the agent's system prompt and the call's task,
// its budget what the caller has left (agent.Budget.Left). The caller's
// driver drives it to its end and records its final answer as the call's
// result, like any tool result, so a resumed caller never runs it again; a
// child that Failed or was Cancelled gives an error result naming the agent,
// the child's run id and why.
//
// A child waiting for a person makes its caller wait the same way: the
// caller's Drive outcome, Show and Signal's checks are the child's, an
// approve, deny or reconcile sent to the caller goes to the child (after
// the child's own checks), and the caller's budget signal gives the child
// its new share the next time the caller is driven. What the children of
// finished calls used counts against the caller's budget (LimitTree), and
// Show reports the caller's usage with its children's. Cancelling the
// caller cancels its child.

// Agent is what a child run of an agent tool runs with: the loop over its
// tools, its executor (its model and tools) and its system prompt.
type Agent struct {
	Loop   agent.Loop
	Exec   agent.Executor
	System string
}

// AgentsOf returns the Agents of an Engine whose runs execute e: an agent's
// loop is like, with the agent's tools (tools.Set.Agent, with its approval
// overrides), its executor e.Agent(name), its system prompt as the tools
// file declares.
func AgentsOf(e *execute.Executor, like agent.Loop) func(name string) (Agent, error) {
	return func(name string) (Agent, error) {
		sub, err := e.Agent(name)
		if err != nil {
			return Agent{}, err
		}
		l := like
		l.Tools, l.FailOnCut, l.FailOnEmpty = sub.Tools.Specs(), sub.FailOnCut, sub.FailOnEmpty
		return Agent{Loop: l, Exec: sub, System: e.Tools.Agents()[name].System}, nil
	}
}

// ChildInfo is the child run of the agent call a run is at, as Show
// reports it.
type ChildInfo struct {
	Agent  string       `json:"agent"`
	RunID  string       `json:"run_id"`
	Status agent.Status `json:"status"`
}

// prober is an executor that asks its tools' probes (execute.Executor).
type prober interface {
	Probe(ctx context.Context, step agent.Step) (agent.ProbeAnswer, error)
}

// childWaitError is a child run that waits for a person: its caller waits
// in Outcome, the child's outcome said of the caller.
type childWaitError struct {
	Agent, RunID string
	Outcome      agent.Outcome
	At           time.Time // when the child goes on without a person (an approval timeout), or zero
	Seen         int       // the child's records when it stopped
}

func (e *childWaitError) Error() string {
	return fmt.Sprintf("agent %s (child run %s) is %s", e.Agent, e.RunID, e.Outcome.Status)
}

// withAgents is j with the agents of exec when j has none and exec is an
// *execute.Executor.
func (j *Engine) withAgents(exec agent.Executor) *Engine {
	if j.Agents != nil {
		return j
	}
	e, ok := exec.(*execute.Executor)
	if !ok || e.Tools == nil {
		return j
	}
	c := *j
	c.Agents = AgentsOf(e, j.Loop)
	return &c
}

// isAgent reports whether tool is an agent tool of the run's loop.
func (j *Engine) isAgent(tool string) bool {
	for _, s := range j.Loop.Tools {
		if s.Name == tool {
			return s.Agent
		}
	}
	return false
}

// agentCall returns the agent a step calls, "" when it is no agent call.
func (j *Engine) agentCall(step *agent.Step) string {
	if step == nil || step.Call == nil || step.Kind == agent.KindModel || !j.isAgent(step.Call.Name) {
		return ""
	}
	return step.Call.Name
}

// child returns the engine and agent of the child runs of the named agent
// that the run parent starts.
func (j *Engine) child(name, parent string) (*Engine, Agent, error) {
	if j.Agents == nil {
		return nil, Agent{}, fmt.Errorf("agent %q: this engine was given no agents (Engine.Agents)", name)
	}
	a, err := j.Agents(name)
	if err != nil {
		return nil, Agent{}, err
	}
	c := &Engine{Store: j.Store, Loop: a.Loop, Now: j.Now, Probe: j.Probe, Retry: j.Retry, OnRetry: j.OnRetry, OnLimitWait: j.OnLimitWait, Agents: j.Agents, Agent: name, parentID: parent}
	if p, ok := a.Exec.(prober); ok && j.Probe != nil {
		c.Probe = p.Probe // the probes of the agent's own tools
	}
	return c, a, nil
}

// of returns the engine of runID: j, or, for a run of another agent than
// j's (a child run, or a run its run.started records another agent of),
// that agent's.
func (j *Engine) of(runID string) (*Engine, error) {
	recs, err := j.Store.Load(runID)
	if err != nil {
		return j, nil // the method's own load reports what is wrong
	}
	return j.ofRecords(runID, recs)
}

// ofRecords is of for the run whose journal starts with recs.
func (j *Engine) ofRecords(runID string, recs []journal.Record) (*Engine, error) {
	if len(recs) == 0 || recs[0].Type != journal.RunStarted || recs[0].Agent == j.Agent {
		return j, nil // the method's own load reports what is wrong
	}
	c, _, err := j.child(recs[0].Agent, recs[0].Parent)
	switch {
	case err != nil && recs[0].Parent == "":
		return nil, fmt.Errorf("run %s runs agent %q, which this engine was not given (%w); show and operate it with the program that defines that agent (a Go program's agentrun.Local)", runID, recs[0].Agent, err)
	case err != nil:
		return nil, fmt.Errorf("run %s is a child run of agent %q: %w", runID, recs[0].Agent, err)
	}
	return c, nil
}

// load loads and folds runID's journal, with what the children of its
// finished agent calls used.
func (j *Engine) load(runID string) ([]journal.Record, *state, error) {
	recs, err := j.Store.Load(runID)
	if err != nil {
		return nil, nil, err
	}
	st := fold(recs)
	j.delegations(runID, st)
	return recs, st, nil
}

// delegations adds to st the model calls and tokens of the children of
// the run's finished agent calls (their own children's included).
func (j *Engine) delegations(runID string, st *state) {
	for name, ss := range st.steps {
		if _, tool := agent.StepTurn(name); !tool || !ss.Completed {
			continue
		}
		parts := strings.SplitN(name, "/", 4)
		if len(parts) != 4 || !j.isAgent(parts[3]) {
			continue
		}
		turns, used, ok := j.childUsage(parts[3], runID, agent.ChildRunID(runID, name))
		if ok {
			st.delegated += turns
			st.delegatedUsage = st.delegatedUsage.Add(used)
		}
	}
}

// childUsage returns the model calls and tokens of the child run id of
// agent name (its children's included); false when it has no journal.
func (j *Engine) childUsage(name, parent, id string) (int, agent.Usage, bool) {
	c, _, err := j.child(name, parent)
	if err != nil {
		c = &Engine{Store: j.Store} // its own calls only: no agents to look into
	}
	_, cst, err := c.load(id)
	if err != nil || !cst.started {
		return 0, agent.Usage{}, false
	}
	turns, used := cst.usage()
	return turns + cst.delegated, used.Add(cst.delegatedUsage), true
}

// current returns the child run of the agent call d is at, as its engine
// shows it; nil when d is no agent call or its child has no journal yet.
func (j *Engine) current(runID string, d agent.Decision) (*Engine, *RunInfo) {
	name := j.agentCall(d.Step)
	if name == "" {
		return nil, nil
	}
	c, _, err := j.child(name, runID)
	if err != nil {
		return nil, nil
	}
	info, err := c.Show(agent.ChildRunID(runID, d.Step.Name))
	if err != nil {
		return nil, nil
	}
	return c, &info
}

// waitsOnChild returns the outcome a run waits in because the child of the
// agent call d is at waits for a person, with the child; nil when it does not.
func (j *Engine) waitsOnChild(runID string, d agent.Decision) (*agent.Outcome, *RunInfo) {
	_, info := j.current(runID, d)
	if info == nil || !operator.WaitsOnPerson(info.Status) {
		return nil, info
	}
	o := agent.Outcome{Status: info.Status, Pending: info.Pending, Step: info.Indeterminate, Reason: info.Reason}
	o.Reason = childReason(d.Step.Call.Name, info.RunID, o)
	return &o, info
}

// childReason says of a caller that its agent's child run waits in o.
func childReason(name, id string, o agent.Outcome) string {
	r := fmt.Sprintf("agent %s (child run %s) is %s", name, id, o.Status)
	if o.Reason != "" {
		r += ": " + o.Reason
	}
	return r
}

// forward returns the engine and child run an operator's approve, deny or
// reconcile sent to runID goes to: the child of the agent call the run is
// at, when it has a journal (its markers are the child's); nil otherwise.
func (j *Engine) forward(runID string, sig operator.Signal) (*Engine, string) {
	switch sig.Name {
	case operator.SignalApprove, operator.SignalDeny, operator.SignalReconcile:
	default:
		return nil, ""
	}
	_, st, err := j.load(runID)
	if err != nil || !st.started || st.closed() != "" {
		return nil, ""
	}
	c, info := j.current(runID, j.decide(st))
	if info == nil || info.Status.Terminal() {
		return nil, ""
	}
	return c, info.RunID
}

// runChild runs the agent call step of runID (whose fold is st) as a child
// run: it starts or resumes the child, gives it what the caller's budget
// has left, and drives it. Its final answer is the call's result; a child
// that Failed or was Cancelled is an error result; a child that waits for a
// person is a *childWaitError.
func (j *Engine) runChild(ctx context.Context, runID string, st *state, step agent.Step) (json.RawMessage, error) {
	name := step.Call.Name
	c, a, err := j.child(name, runID)
	if err != nil {
		return nil, err
	}
	id := agent.ChildRunID(runID, step.Name)
	own, used := st.usage()
	left, why := st.ops.Budget.Left(own+st.delegated, used.Add(st.delegatedUsage))
	if why != "" { // LimitTree stops the call before: only a race gets here
		return nil, &childWaitError{Agent: name, RunID: id, Outcome: agent.Outcome{Status: agent.StatusBudgetExceeded, Reason: why}}
	}
	c.Limits = left
	if err := c.share(ctx, id, left); err != nil {
		return nil, fmt.Errorf("agent %s (child run %s): %w", name, id, err)
	}
	o, err := c.Drive(ctx, id, agent.ChildInput(a.System, agent.ChildTask(*step.Call)), a.Exec)
	if err != nil {
		if errors.Is(context.Cause(ctx), errCancelled) {
			// The caller was cancelled while the child ran: so is the child
			// (Cancel did it already when it went through this engine).
			_ = c.Cancel(context.WithoutCancel(ctx), id)
		}
		return nil, fmt.Errorf("agent %s (child run %s): %w", name, id, err)
	}
	switch {
	case o.Status == agent.StatusCompleted:
		return agent.EncodeToolResult(agent.ToolResult{Content: o.Answer}), nil
	case o.Status == agent.StatusCancelled && j.cancelled(runID):
		return nil, errCancelled // the caller's cancel: the caller ends Cancelled too
	case o.Status.Terminal():
		return agent.EncodeToolResult(agent.ToolResult{IsError: true, Content: childReason(name, id, o)}), nil
	}
	w := &childWaitError{Agent: name, RunID: id, Outcome: o}
	w.Outcome.Reason = childReason(name, id, o)
	if recs, cst, err := c.load(id); err == nil {
		w.Seen, w.At = len(recs), cst.wakeAt(o)
	}
	return nil, w
}

// share raises the budget of the existing child run id to left, the share
// its caller has for it now (after the caller's budget was raised); a
// child that already has as much, or that ended, is left as it is.
func (j *Engine) share(ctx context.Context, id string, left agent.Budget) error {
	recs, err := j.Store.Load(id)
	if err != nil || len(recs) == 0 {
		return err
	}
	st := fold(recs)
	if st.closed() != "" {
		return nil
	}
	cur := st.ops.Budget.WithDefaults()
	sig := operator.Signal{Name: operator.SignalBudget}
	if left.MaxTurns > cur.MaxTurns {
		sig.MaxTurns = left.MaxTurns
	}
	if left.MaxTokens > cur.MaxTokens && cur.MaxTokens > 0 {
		sig.MaxTokens = left.MaxTokens
	}
	if sig.MaxTurns == 0 && sig.MaxTokens == 0 {
		return nil
	}
	if err := j.signal(ctx, id, sig); err != nil && !errors.Is(err, operator.ErrInvalid) {
		return err // refused (tokens not above what it used): it stays as it is
	}
	return nil
}

// cancelChild cancels the child run of the agent call the cancelled run
// runID is at, if it has one that goes on.
func (j *Engine) cancelChild(ctx context.Context, runID string) error {
	_, st, err := j.load(runID)
	if err != nil {
		return err
	}
	c, info := j.current(runID, j.decide(st))
	if info == nil || info.Status.Terminal() {
		return nil
	}
	if err := c.Cancel(ctx, info.RunID); err != nil && !errors.Is(err, operator.ErrInvalid) {
		return fmt.Errorf("cancel child run %s: %w", info.RunID, err)
	}
	return nil
}

// maxDepth bounds Root's walk up a tree of child runs.
const maxDepth = 64

// Root returns the top run of the tree of child runs runID is in (the
// parents their run.started records name): runID itself for a run of its
// own, or one whose journal cannot be read.
func (j *Engine) Root(runID string) string {
	for range maxDepth {
		recs, err := j.Store.Load(runID)
		if err != nil || len(recs) == 0 || recs[0].Parent == "" {
			return runID
		}
		runID = recs[0].Parent
	}
	return runID
}
