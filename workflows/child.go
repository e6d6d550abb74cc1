package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/progress"
)

// Child runs. A call of an agent tool (agent.ToolSpec.Agent) runs a child
// AgentRun workflow: its id is agent.ChildRunID(run, step), its input the
// call's task, its budget what the run has left (agent.Budget.Left). While
// it runs, the child rings its parent (SignalChild) whenever where it
// stands changes; the parent reads the child's state (childread.go) and
// shows it as its own: its status, the pending markers or the
// indeterminate step, the search attributes and the current details, with
// the child named (State.Child). An approve, deny or reconcile sent to the
// parent then goes to the child, checked against that view; a raised
// budget rings the child, which reads its new share from the parent
// (childshare.go). The child's answer is the call's result; its usage and
// model calls count as the parent's, however it ends. The parent never continues as new while a
// child runs: it waits on the child's completion, and continues, when due,
// before its next step.

// SignalChild is the signal a child run sends its parent when where it
// stands changed (with a Child, which runs recorded before
// versionChildRead showed). It is no operator input, and anyone can send
// it: the parent reads its child's state when it rings.
const SignalChild = "agentrun-child"

// Child is a child run as its parent shows it: the child's own report of
// where it stands.
type Child struct {
	// Run is the child's run id; Agent the agent tool it runs, Step the
	// parent's step that runs it (the parent fills both in).
	Run   string `json:"run"`
	Agent string `json:"agent,omitempty"`
	Step  string `json:"step,omitempty"`
	// Status is the child's: its own wait or, when it waits on a child of
	// its own, that one's (then Child names it).
	Status        agent.Status    `json:"status"`
	Pending       []agent.Pending `json:"pending,omitempty"`
	Indeterminate string          `json:"indeterminate,omitempty"`
	Why           string          `json:"why,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	// Turns and Usage are what the child used so far (its own children's
	// included), Budget its limits.
	Turns  int          `json:"turns"`
	Usage  agent.Usage  `json:"usage"`
	Budget agent.Budget `json:"budget"`
	// Child is the child's own running child, if any.
	Child *Child `json:"child,omitempty"`
}

// waits reports whether the child waits for a person.
func (c *Child) waits() bool {
	switch c.Status {
	case agent.StatusAwaitingApproval, agent.StatusIndeterminate, agent.StatusBudgetExceeded:
		return true
	}
	return false
}

// Deepest is the child at the end of the chain of running children.
func (c *Child) Deepest() *Child {
	for c.Child != nil {
		c = c.Child
	}
	return c
}

// forwardWait bounds how long an update forwarded to a child run waits
// for the child's next report before it answers with the state as it is.
const forwardWait = 30 * time.Second

// delegation is the child run a step of this execution runs now.
type delegation struct {
	run, agent, step string
	// read is set when the run reads its child (versionChildRead): runID
	// is then the child's execution, once started, bell its doorbell,
	// hash the hash of the view last read, and share the most of the
	// run's budget the child was given (its counts are capped by it).
	read  bool
	runID string
	bell  bell
	hash  string
	share agent.Budget
}

// isAgent reports whether the run's catalog offers tool as an agent tool.
func (r *execution) isAgent(tool string) bool {
	for _, t := range r.cat.Tools {
		if t.Name == tool {
			return t.Agent
		}
	}
	return false
}

// turnsUsed is the model calls the run made, its finished children's
// included.
func (r *execution) turnsUsed() int { return r.turn.cp.Turn - r.forkBase() + r.state.Delegated }

// delegate runs the agent call s as a child run and records its answer (or
// why it has none) as the call's result.
func (r *execution) delegate(s agent.Step) error {
	r.waitBegan = time.Time{}
	name := s.Call.Name
	id := agent.ChildRunID(r.id, s.Name)
	left, _ := r.budget.Left(r.turnsUsed(), r.state.Usage) // the loop's budget check let it start
	task := agent.ChildTask(*s.Call)
	in := Input{Messages: []agent.Message{task}, Agent: name, MaxTurns: left.MaxTurns, MaxTokens: left.MaxTokens, MaxCost: left.MaxCost, Stream: r.in.Stream}
	if r.in.Stream == nil && r.in.Session {
		on := true
		in.Stream = &on // a session's children stream like it
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID: id,
		// A parent that closes before its child (terminated, timed out)
		// cancels it; a cancelled parent waits until its child is.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation:   true,
		StaticSummary:         Summary(name + ": " + task.Text()),
		StaticDetails:         StaticDetails(id),
		TypedSearchAttributes: StartAttributes(""),
	}
	r.event(progress.Event{Type: progress.EventStepStarted, Step: s.Name, Kind: s.Kind, Child: id})
	d := &delegation{run: id, agent: name, step: s.Name, share: left,
		read: r.v.of(r.ctx, versionChildRead) >= 1}
	r.delegating = d
	var res Result
	fut := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(r.ctx, opts), WorkflowName, in)
	stopReads := func() {}
	if d.read {
		var rctx workflow.Context
		rctx, stopReads = workflow.WithCancel(r.ctx)
		workflow.Go(rctx, func(ctx workflow.Context) { r.readChildren(ctx, d, fut.GetChildWorkflowExecution()) })
	}
	err := fut.Get(r.ctx, &res)
	stopReads()
	last := r.state.Child
	r.delegating = nil
	if r.state.Child != nil {
		r.state.Child = nil
		r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Why, r.state.Reason = agent.StatusRunning, nil, "", "", ""
		r.publish()
	}
	if err != nil && r.ctx.Err() != nil {
		return err // the run was cancelled, and its child with it
	}
	result := agent.ToolResult{Content: res.Answer}
	if err != nil {
		res = childUsed(err)
		if d.read && res == (Result{}) {
			res = r.chargeEnded(d, fut, last)
		}
		result = agent.ToolResult{IsError: true, Content: childFailure(name, id, err)}
	}
	r.state.Usage = r.state.Usage.Add(res.Usage)
	r.state.Delegated += res.Turns
	r.completed(s, 0, agent.EncodeToolResult(result))
	return nil
}

// childUsed is what a child that did not answer used, from its failure's
// details (fail puts them there).
func childUsed(err error) Result {
	var res Result
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.HasDetails() {
		_ = appErr.Details(&res)
	}
	return res
}

// childFailure is the result the calling model reads when the child run id
// of agent name gave no answer.
func childFailure(name, id string, err error) string {
	var (
		appErr     *temporal.ApplicationError
		canceled   *temporal.CanceledError
		terminated *temporal.TerminatedError
		timeout    *temporal.TimeoutError
		started    *temporal.ChildWorkflowExecutionAlreadyStartedError
		why        string
	)
	switch {
	case errors.As(err, &canceled):
		why = "was cancelled"
	case errors.As(err, &terminated):
		why = "was terminated"
	case errors.As(err, &timeout):
		why = "timed out"
	case errors.As(err, &started):
		why = "could not start: a run with its id is already running"
	case errors.As(err, &appErr):
		why = "failed: " + appErr.Message()
	default:
		why = "failed: " + err.Error()
	}
	return fmt.Sprintf("the agent %s (run %s) %s; it gave no answer", name, id, why)
}

// childReport takes a child's report (SignalChild): the run shows where
// its child stands. A report from any other run is dropped.
func (r *execution) childReport(raw converter.RawValue) {
	d := r.delegating
	if d != nil && d.read {
		d.bell.rung = true // the report is a doorbell: readChildren reads the child
		return
	}
	var c Child
	if d == nil || raw.Payload() == nil || json.Unmarshal(raw.Payload().GetData(), &c) != nil || c.Run != d.run {
		return
	}
	r.showChild(&c)
}

// showChild shows c as where the running child stands.
func (r *execution) showChild(c *Child) {
	d := r.delegating
	c.Agent, c.Step = d.agent, d.step
	r.state.Child = c
	r.childReports++
	if c.waits() {
		r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Why, r.state.Reason = c.Status, c.Pending, c.Indeterminate, c.Why, c.Reason
	} else {
		r.state.Status, r.state.Pending, r.state.Indeterminate, r.state.Why, r.state.Reason = agent.StatusRunning, nil, "", "", ""
	}
	r.publish()
}

// report tells the run's parent where the run stands, when it is a child
// run and that changed since it last told.
func (r *execution) report() {
	p := workflow.GetInfo(r.ctx).ParentWorkflowExecution
	if !r.delegated || r.cat.Agent == "" || r.state.Status.Terminal() {
		return
	}
	c := Child{Run: r.id, Status: r.state.Status, Pending: r.state.Pending, Indeterminate: r.state.Indeterminate, Why: r.state.Why, Reason: r.state.Reason,
		Turns: r.turnsUsed(), Usage: r.state.Usage, Budget: r.budget.WithDefaults(), Child: r.state.Child}
	if c.Child != nil {
		c.Turns += c.Child.Turns
		c.Usage = c.Usage.Add(c.Child.Usage)
	}
	b, _ := json.Marshal(c) // a struct of strings, numbers and lists always encodes
	if string(b) == r.reported {
		return
	}
	r.reported = string(b)
	workflow.SignalExternalWorkflow(r.ctx, p.ID, "", SignalChild, c)
}

// forwardTo is the child an operator input goes to: approve, deny and
// reconcile while a child runs; nil for the run's own inputs.
func (r *execution) forwardTo(sig operator.Signal) *Child {
	if r.delegating == nil {
		return nil
	}
	switch sig.Name {
	case operator.SignalApprove, operator.SignalDeny, operator.SignalReconcile:
	default:
		return nil
	}
	if c := r.state.Child; c != nil {
		return c
	}
	return &Child{Run: r.delegating.run, Agent: r.delegating.agent, Step: r.delegating.step, Status: agent.StatusRunning}
}

// childStand is where the child stands as it reported, for operator.Check
// of an input the run forwards (the child checks it again against all it
// knows). The execution an approve names is the parent's.
func (r *execution) childStand(c *Child) operator.Stand {
	s := operator.Stand{RunID: c.Run, Status: c.Status, Facts: agent.NewFacts(), Budget: c.Budget, Turns: c.Turns, Usage: c.Usage,
		FirstExecution: workflow.GetInfo(r.ctx).FirstRunID}
	if c.waits() {
		s.Outcome = &agent.Outcome{Status: c.Status, Pending: c.Pending, Step: c.Indeterminate, Reason: c.Reason}
	}
	if c.Indeterminate != "" {
		s.Facts.Indeterminate[c.Indeterminate] = true
	}
	return s
}

// forward sends an operator input on to the running child.
func (r *execution) forward(sig operator.Signal, c *Child) {
	workflow.GetLogger(r.ctx).Info("operator input for a child run", "signal", sig.Name, "child", c.Run)
	workflow.SignalExternalWorkflow(r.ctx, c.Run, "", sig.Name, operator.PayloadOf(sig, ""))
}

// shareBudget gives the running child its share of the run's budget, once
// the run's limits were raised.
func (r *execution) shareBudget() {
	d := r.delegating
	if d == nil {
		return
	}
	left, why := r.budget.Left(r.turnsUsed(), r.state.Usage)
	if why != "" {
		return
	}
	if d.read {
		// The child reads its share from this run's state (readShare).
		d.share = maxBudget(d.share, left)
		workflow.SignalExternalWorkflow(r.ctx, d.run, d.runID, SignalShare, nil)
		return
	}
	if c := r.state.Child; c != nil {
		// A limit the child already used is kept as it is (0), not sent:
		// the child would refuse it.
		if left.MaxTurns <= c.Turns {
			left.MaxTurns = 0
		}
		if left.MaxTokens <= c.Usage.Total() {
			left.MaxTokens = 0
		}
		if left.MaxCost <= c.Usage.Cost {
			left.MaxCost = 0
		}
	}
	if left.MaxTurns == 0 && left.MaxTokens == 0 && left.MaxCost == 0 {
		return
	}
	workflow.SignalExternalWorkflow(r.ctx, d.run, "", operator.SignalBudget, operator.BudgetPayload(left))
}

// Used is what the run used of its budget: the model calls and tokens of
// its own steps, its finished children and the child running now.
func (s *State) Used() (turns int, used agent.Usage) {
	turns, used = s.Turns+s.Delegated, s.Usage
	if c := s.Child; c != nil {
		turns += c.Turns
		used = used.Add(c.Usage)
	}
	return turns, used
}

// ChildStepAttr is the AgentRunStep value of a run that waits on its child
// run (the deepest one waiting, run): what the child waits on, " in run ",
// and its id.
func ChildStepAttr(s State, run string) string {
	what := s.Indeterminate
	if s.Status == agent.StatusAwaitingApproval {
		markers := make([]string, len(s.Pending))
		for i, p := range s.Pending {
			markers[i] = p.Marker
		}
		what = StepAttr(markers)
	}
	if what == "" {
		what = string(s.Status)
	}
	return what + " in run " + run
}
