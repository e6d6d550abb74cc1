package workflows

import (
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/shell"
)

// A child run's budget is its share of its parent's: what the parent had
// left when it started the child, raised only from the parent's own state
// (readShare) when the parent rings SignalShare after its budget was
// raised. A budget sent to the child itself is refused, naming its top
// run (versionChildShare).

// sharing is a child run's side of its budget (versionChildShare): the
// doorbell its parent rings.
type sharing struct{ bell bell }

// startSharing decides, for a child run, whether it takes its budget from
// its parent only (versionChildShare), and then serves its doorbell. It
// runs before any handler takes an input.
func (r *execution) startSharing() {
	p := workflow.GetInfo(r.ctx).ParentWorkflowExecution
	if !r.delegated || r.v.of(r.ctx, versionChildShare) < 1 {
		return
	}
	s := &sharing{}
	r.sharing = s
	workflow.Go(r.ctx, func(ctx workflow.Context) {
		s.bell.serve(ctx, "the parent run's budget", func(ctx workflow.Context) error {
			var sh shareRead
			if err := workflow.ExecuteLocalActivity(readOptions(ctx), readShare, p.ID, p.RunID, r.id).Get(ctx, &sh); err != nil {
				return err
			}
			if sh.Left != nil {
				r.takeShare(*sh.Left)
			}
			return nil
		})
	})
}

// ringShare takes a SignalShare: a child run reads its parent's budget.
// Its payload is not looked at.
func (r *execution) ringShare(converter.RawValue) {
	if r.sharing != nil {
		r.sharing.bell.rung = true
	}
}

// takeShare raises the run's limits to left, what its parent has left for
// it, where that is more (a limit the run has not set stays unset), gives
// its own running child its share in turn, and wakes the loop.
func (r *execution) takeShare(left agent.Budget) {
	cur := r.budget.WithDefaults()
	next := cur
	next.MaxTurns = max(cur.MaxTurns, left.MaxTurns)
	if cur.MaxTokens > 0 {
		next.MaxTokens = max(cur.MaxTokens, left.MaxTokens)
	}
	if cur.MaxCost > 0 {
		next.MaxCost = max(cur.MaxCost, left.MaxCost)
	}
	if next == cur {
		return
	}
	workflow.GetLogger(r.ctx).Info("took a share of the parent run's budget", "max_turns", next.MaxTurns, "max_tokens", next.MaxTokens)
	r.budget = next
	r.state.Budget = next
	r.shareBudget()
	r.inputs.changes++
}

// childBudget is the refusal of a budget sent to a child run that takes
// its budget from its parent: one line naming the top run and the
// command to use there.
func (r *execution) childBudget() error {
	info := workflow.GetInfo(r.ctx)
	top := info.ParentWorkflowExecution.ID
	if root := info.RootWorkflowExecution; root != nil && root.ID != "" {
		top = root.ID
	}
	return fmt.Errorf("%w budget: run %s is a child run of agent %s, whose budget is its share of its top run's; raise the budget of run %s instead: reconcile budget %s MAX_TURNS",
		operator.ErrInvalid, r.id, r.in.Agent, top, shell.Quote(top))
}
