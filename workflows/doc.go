// Package workflows holds AgentRun, the Temporal workflow of one agent
// run. It drives the agent loop of package agent: every model step is a
// CallModel activity and every tool step a CallTool activity, with the step
// name as activity id. The loop is re-run from the start after every new
// fact (an activity result, an approval, a denial, a reconciliation), so a
// completed step is never executed again.
//
// Operators act through signals approve, deny and reconcile (payloads as
// in the operator contract), received as raw values and validated by the
// workflow: a bad payload is recorded as rejected with a reason that the
// state query and the current details show, and never wedges the run. The
// same three operations are updates with validators, which give the caller
// the error at once. The query state returns where the run stands.
//
// The run shows in the Web UI through the search attributes AgentRunStatus
// and AgentRunStep, the prompt as static summary, and current details
// that say, in markdown, what the run waits for and the exact command that
// unblocks it.
package workflows
