// Package wfchange holds the test-only breaking change to the AgentRun
// workflow (testhook.Hooks.WorkflowChange, AGENTRUN_TEST_WORKFLOW_CHANGE=1),
// which the worker registers in place of workflows.AgentRun when a test
// asks for it: a change of command order of the kind the workflows
// package's replay guard catches, made deliberately.
package wfchange
