// Command refund runs agentrun's worked example (package refund) against
// a Temporal server: it starts a worker, starts SupportWorkflow for a
// customer's refund request, waits until the agent's run awaits approval
// of the refund, prints the refund's arguments (read with
// agentrun.Client's Run.Pending), approves them with Run.Approve and
// prints the agent's answer.
//
// It reads the server's address and namespace as the temporal CLI does
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, a profile), by default
// localhost:7233 and "default", and keeps its journal in a temporary
// folder that it removes at the end.
//
//	temporal server start-dev   # in another terminal
//	go run ./examples/refund/cmd/refund
package main
